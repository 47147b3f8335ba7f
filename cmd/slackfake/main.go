// Command slackfake serves the fake Slack of package slackfake on a port, for
// tests that run the bot in child processes. It prints the base URL on the
// first line of stdout (point SLACK_API_URL at URL+"/api/") and serves until
// interrupted. Drive and inspect it through the admin API under /_fake/.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"deepresearch/bot/slackfake"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "slackfake:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	botToken := flag.String("bot-token", slackfake.DefaultBotToken, "accepted bot token (xoxb-)")
	appToken := flag.String("app-token", slackfake.DefaultAppToken, "accepted app-level token (xapp-)")
	ping := flag.Duration("ping", 5*time.Second, "interval of server WebSocket pings (0 disables)")
	redeliver := flag.Duration("redeliver", 0, "redeliver envelopes not acked within this time (0 disables)")
	retries := flag.Int("retries", 3, "maximum redeliveries of an envelope")
	triggerTTL := flag.Duration("trigger-ttl", 3*time.Second, "trigger_id lifetime for views.open (0: never expires)")
	echo := flag.Bool("echo", false, "echo the bot's own messages back as message events")
	limits := flag.Bool("tier-limits", false, "enforce Slack's rate limits: chat.update 50/min (burst 20) per workspace, chat.postMessage 1/s (burst 5) per channel")
	verbose := flag.Bool("v", false, "log debug messages to stderr")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	opts := []slackfake.Option{
		slackfake.WithTokens(*botToken, *appToken),
		slackfake.WithPingInterval(*ping),
		slackfake.WithRedelivery(*redeliver, *retries),
		slackfake.WithTriggerTTL(*triggerTTL),
		slackfake.WithEchoBotMessages(*echo),
		slackfake.WithLogger(logger),
	}
	if *limits {
		opts = append(opts, slackfake.WithTierLimits(slackfake.Limits{}))
	}
	fake, err := slackfake.Start(*addr, opts...)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer fake.Close()
	fmt.Println(fake.URL())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
