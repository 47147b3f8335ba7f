package main

import (
	"io"
	"strings"
	"testing"
)

// The chat.update budget comes from the environment: defaults 50/min and a
// burst of 20, -1 for no limit, and a mistake names the variable.
func TestServeConfigSlackUpdateBudget(t *testing.T) {
	base := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
	with := func(kv ...string) env {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return mapEnv(m)
	}
	c, err := loadServeConfig(nil, with(), io.Discard)
	if err != nil || c.UpdatesPerMinute != 50 || c.UpdateBurst != 20 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = loadServeConfig(nil, with("DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE", "17", "DEEPRESEARCH_SLACK_UPDATE_BURST", "7"), io.Discard)
	if err != nil || c.UpdatesPerMinute != 17 || c.UpdateBurst != 7 {
		t.Fatalf("set: %+v, %v", c, err)
	}
	c, err = loadServeConfig(nil, with("DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE", "-1"), io.Discard)
	if err != nil || c.UpdatesPerMinute != -1 {
		t.Fatalf("unlimited: %+v, %v", c, err)
	}
	for _, bad := range [][2]string{
		{"DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE", "fifty"},
		{"DEEPRESEARCH_SLACK_UPDATES_PER_MINUTE", "0"},
		{"DEEPRESEARCH_SLACK_UPDATE_BURST", "0"},
		{"DEEPRESEARCH_SLACK_UPDATE_BURST", "1.5"},
	} {
		_, err := loadServeConfig(nil, with(bad[0], bad[1]), io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), bad[0]+":") {
			t.Errorf("%s=%s: err %v, want one naming the variable", bad[0], bad[1], err)
		}
	}
}
