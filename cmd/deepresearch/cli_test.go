package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"deepresearch/storage/pgtest"
)

// Help exits 0 on every command, --version works, and a flag error is
// printed once, with the usage, and exits 2.
func TestCLIHelpVersionAndFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		want     string // in stdout+stderr
		wantOnce string // exactly once in stdout+stderr
	}{
		{[]string{"serve", "--help"}, 0, "usage: deepresearch serve", ""},
		{[]string{"serve", "-h"}, 0, "SLACK_BOT_TOKEN", ""},
		{[]string{"migrate", "-h"}, 0, "usage: deepresearch migrate", ""},
		{[]string{"migrate", "--help"}, 0, "DATABASE_URL", ""},
		{[]string{"ask", "--help"}, 0, "usage: deepresearch ask", ""},
		{[]string{"--version"}, 0, "deepresearch ", ""},
		{[]string{"-version"}, 0, "deepresearch ", ""},
		{[]string{"version"}, 0, "deepresearch ", ""},
		{[]string{"ask", "--bogus", "q"}, 2, "usage: deepresearch ask", "flag provided but not defined: -bogus"},
		{[]string{"serve", "--bogus"}, 2, "usage: deepresearch serve", "flag provided but not defined: -bogus"},
		{[]string{"migrate", "--bogus"}, 2, "usage: deepresearch migrate", "flag provided but not defined: -bogus"},
		{[]string{"ask", "--depth"}, 2, "", "flag needs an argument: -depth"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			// no environment at all: help must not need any configuration
			code := run(context.Background(), tc.args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if tc.wantOnce != "" && strings.Count(out, tc.wantOnce) != 1 {
				t.Errorf("%q appears %d times, want once:\n%s", tc.wantOnce, strings.Count(out, tc.wantOnce), out)
			}
		})
	}
}

func TestVersionString(t *testing.T) {
	v := versionString()
	if v == "" || strings.ContainsAny(v, "\n\x1b") {
		t.Fatalf("versionString() = %q", v)
	}
}

// pgWithPassword returns a throwaway schema's URL with a password in its
// query (trust auth ignores it) and the password.
func pgWithPassword(t *testing.T) (string, string) {
	u, err := url.Parse(pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	const pw = "hunter2-in-the-query"
	q := u.Query()
	q.Set("password", pw)
	u.RawQuery = q.Encode()
	return u.String(), pw
}

// A password in DATABASE_URL (userinfo or query) is never printed by
// migrate, nor logged by serve's storage line.
func TestDatabaseURLPasswordRedacted(t *testing.T) {
	dbURL, pw := pgWithPassword(t)
	var stdout, stderr bytes.Buffer
	e := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	if code := run(context.Background(), []string{"migrate"}, e, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("migrate exit %d: %s", code, stderr.String())
	}
	out := stdout.String() + stderr.String()
	if strings.Contains(out, pw) || !strings.Contains(out, "password=***") {
		t.Errorf("migrate printed %q", out)
	}

	// serve's "serve: storage" line
	fakeEnv := askWorld(t)
	fakeEnv["DATABASE_URL"] = dbURL
	var logs bytes.Buffer
	cfg, err := loadConfig(getenv(fakeEnv))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := serveDeps(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	parts.close()
	if strings.Contains(logs.String(), pw) || !strings.Contains(logs.String(), "serve: storage") {
		t.Errorf("serve logged %s", logs.String())
	}

	// an error that quotes the URL (a driver's parse error) is scrubbed too
	bad := strings.Replace(dbURL, "?", "?connect_timeout=bogus&", 1)
	stderr.Reset()
	e2 := func(k string) string {
		if k == "DATABASE_URL" {
			return bad
		}
		return ""
	}
	if code := run(context.Background(), []string{"migrate"}, e2, strings.NewReader(""), io.Discard, &stderr); code == 0 {
		t.Fatal("migrate with connect_timeout=bogus succeeded")
	}
	if strings.Contains(stderr.String(), pw) {
		t.Errorf("error line leaks the password: %s", stderr.String())
	}
}
