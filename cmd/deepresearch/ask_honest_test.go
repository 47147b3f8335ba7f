package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"deepresearch/agent/llm/llmtest"
)

// A wrong key, a base URL that does not answer, or a model the server does
// not serve: ask stops before researching, with one line naming the
// variable, and exit status 1. With DEEPRESEARCH_MODEL unset on such a
// server, its only model is used (and ask says so), or the served models
// are listed.
func TestAskModelEndpointPreflight(t *testing.T) {
	closed := llmtest.ClosedURL(t)
	for _, tc := range []struct {
		name string
		llm  []llmtest.Option
		set  map[string]string // "" deletes
		code int
		want []string // all in stderr
	}{
		{"wrong key", []llmtest.Option{llmtest.WithAPIKey("right")}, map[string]string{"OPENAI_API_KEY": "wrong"}, 1,
			[]string{"OPENAI_API_KEY", "HTTP 401"}},
		{"does not answer", nil, map[string]string{"OPENAI_BASE_URL": closed}, 1,
			[]string{"OPENAI_BASE_URL", closed, "does not answer"}},
		{"model not served", []llmtest.Option{llmtest.WithModels("real-model", "other-model")}, nil, 1,
			[]string{"DEEPRESEARCH_MODEL", `"fake"`, "other-model, real-model"}},
		{"role model not served", []llmtest.Option{llmtest.WithModels("fake")}, map[string]string{"DEEPRESEARCH_MODEL_WRITER": "gpt-9"}, 1,
			[]string{"DEEPRESEARCH_MODEL_WRITER", `"gpt-9"`}},
		{"model unset, several served", []llmtest.Option{llmtest.WithModels("a-model", "b-model")}, map[string]string{"DEEPRESEARCH_MODEL": ""}, 1,
			[]string{"DEEPRESEARCH_MODEL", "a-model, b-model"}},
		{"model unset, one served", []llmtest.Option{llmtest.WithModels("only-model")}, map[string]string{"DEEPRESEARCH_MODEL": ""}, 0,
			[]string{"using model only-model", "DEEPRESEARCH_MODEL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars, srv := newAskWorld(t, worldOpts{llm: tc.llm})
			for k, v := range tc.set {
				if v == "" {
					delete(vars, k)
				} else {
					vars[k] = v
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"ask", "-q", "What does the EU AI Act require?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr)
			out := stderr.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			}
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("stderr lacks %q:\n%s", s, out)
				}
			}
			if tc.code != 0 {
				if n := strings.Count(strings.TrimSpace(out), "\n"); n != 0 {
					t.Errorf("stderr has %d lines, want one:\n%s", n+1, out)
				}
				if srv.Calls() != 0 {
					t.Errorf("%d chat calls before failing; want none", srv.Calls())
				}
				if strings.Contains(out, "wrong") {
					t.Errorf("the key was printed: %s", out)
				}
			} else if !strings.Contains(stdout.String(), "## References") {
				t.Errorf("no report:\n%s", stdout.String())
			}
		})
	}
}

// The model failing after a good start: the labelled extractive report is
// still written, but ask says it was written without the model and exits 3.
func TestAskOutageAfterStartExits3(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if n := r.Node(); n == "coordinator" || n == "planner" {
			return scripted
		}
		return llmtest.ServerError()
	}})
	vars["DEEPRESEARCH_LLM_MAX_RETRIES"] = "0"
	stdout, stderr := askCLI(t, vars, exitWithoutModel, "What does the EU AI Act require?")
	if !strings.Contains(stdout, "Extractive report") {
		t.Errorf("report is not the labelled extractive one:\n%s", stdout)
	}
	last := lastLine(stderr)
	for _, s := range []string{"without the model", "server error"} {
		if !strings.Contains(last, s) {
			t.Errorf("last line %q lacks %q", last, s)
		}
	}
}

// A failed attempt that is retried shows "waiting for the model (retry n)"
// instead of silence; the last line has the elapsed time, and the cost
// when DEEPRESEARCH_LLM_PRICES prices the model.
func TestAskRetryLineElapsedAndCost(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{wrap: plannerFailsOnce(llmtest.ServerError())})
	vars["DEEPRESEARCH_LLM_PRICES"] = "fake=2.5/10"
	_, stderr := askCLI(t, vars, 0, "What does the EU AI Act require?")
	if !strings.Contains(stderr, "waiting for the model (retry 1 in ") {
		t.Errorf("no retry line:\n%s", stderr)
	}
	last := lastLine(stderr)
	if !regexp.MustCompile(`^done \(\w+\) in [0-9.]+m?s: .* tokens in \d+ requests .*, \d+ tokens per verified citation, cost \$0\.\d+$`).MatchString(last) {
		t.Errorf("last line = %q, want elapsed time, tokens per verified citation and cost", last)
	}
	// the planner's failed request reached the server: it is counted, and
	// its prompt is in the tokens
	m := regexp.MustCompile(`tokens in (\d+) requests \((\d+) calls answered; (\d+) tokens on failed`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line = %q, want the failed request counted apart", last)
	}
	if req, calls, wasted := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3]); req <= calls || wasted <= 0 {
		t.Errorf("last line = %q: %d requests for %d answered calls, %d tokens wasted; want the failed request counted", last, req, calls, wasted)
	}

	// unpriced: elapsed time, no cost
	vars2, _ := newAskWorld(t, worldOpts{})
	_, stderr = askCLI(t, vars2, 0, "What does the EU AI Act require?")
	last = lastLine(stderr)
	if !regexp.MustCompile(`^done \(\w+\) in [0-9.]+m?s: `).MatchString(last) || strings.Contains(last, "cost") {
		t.Errorf("last line = %q, want elapsed time and no cost", last)
	}
}

// --thread with a question continues a thread; an unknown id is refused
// like a missing question, before anything is researched.
func TestAskUnknownThreadRefused(t *testing.T) {
	vars, srv := newAskWorld(t, worldOpts{})
	for _, args := range [][]string{{"--thread", "cli-typo", "and the fines?"}, {"--thread", "cli-typo"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"ask"}, args...), getenv(vars), strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "no thread with that --thread id") || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr.String())
		}
		if srv.Calls() != 0 || stdout.Len() != 0 {
			t.Errorf("%q: a research started: %d calls, stdout %q", args, srv.Calls(), stdout.String())
		}
	}
}

// Text from web pages and from the model reaches neither the terminal nor
// the report file with control characters: an OSC 52 clipboard write in a
// page title and in the model's report, a C1 CSI (U+009B) in both.
func TestAskStripsTerminalEscapes(t *testing.T) {
	const osc52 = "\x1b]52;c;ZWNobyBwd25lZA==\a"
	const c1 = "\u009b2J"
	pages := map[string][2]string{}
	for k, v := range askPages {
		pages[k] = v
	}
	pages["/timeline"] = [2]string{"AI Act timeline" + osc52 + c1, pages["/timeline"][1]}
	vars, _ := newAskWorld(t, worldOpts{pages: pages, wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		switch r.Node() {
		case "planner":
			return llmtest.JSON(map[string]any{"theme": "EU AI Act" + osc52, "investigation_points": []string{"Timeline"}, "search_queries": []string{"ai act timeline"},
				"subtasks":  []map[string]any{{"title": "Timeline" + c1, "queries": []string{"ai act timeline"}}},
				"plan_text": "One point.", "evaluation_types": []string{"attribution"}})
		case "writer":
			scripted.Content = strings.Replace(scripted.Content, "The act is in force.", "The act is in force."+osc52+c1+"\r", 1)
		}
		return scripted
	}})
	for _, toFile := range []bool{false, true} {
		var stdout, stderr bytes.Buffer
		args := []string{"ask", "What does the EU AI Act require?"}
		file := filepath.Join(t.TempDir(), "report.md")
		if toFile {
			args = append(args, "-o", file)
		}
		if code := run(context.Background(), args, getenv(vars), strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d\n%q", code, stderr.String())
		}
		outputs := map[string]string{"stdout": stdout.String(), "stderr": stderr.String()}
		if toFile {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			outputs["report file"] = string(b)
		}
		for name, s := range outputs {
			if strings.ContainsAny(s, "\x1b\a\r\u009b") {
				t.Errorf("%s carries control characters: %q", name, s)
			}
		}
		if !strings.Contains(stderr.String(), "plan: EU AI Act]52;c;ZWNobyBwd25lZA==") {
			t.Errorf("the plan line lost its printable text:\n%s", stderr.String())
		}
	}
}

// A model that hangs: the attempt times out and the retry is announced.
func TestAskHangShowsWaiting(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{wrap: plannerFailsOnce(llmtest.Hang())})
	vars["DEEPRESEARCH_LLM_TIMEOUT"] = "300ms"
	_, stderr := askCLI(t, vars, 0, "What does the EU AI Act require?")
	if !strings.Contains(stderr, "waiting for the model (retry 1 in ") || !strings.Contains(stderr, "timed out") {
		t.Errorf("no waiting line for the hang:\n%s", stderr)
	}
}

// A review score no reviewer gave (the reviewer model failed; the score is
// the heuristic one) says so.
func TestAskHeuristicReviewSaysSo(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if r.Node() == "reviewer" {
			return llmtest.ServerError()
		}
		return scripted
	}})
	vars["DEEPRESEARCH_LLM_MAX_RETRIES"] = "0"
	_, stderr := askCLI(t, vars, 0, "What does the EU AI Act require?")
	if !regexp.MustCompile(`review score \d\.\d\d is heuristic: no reviewer model gave it`).MatchString(stderr) {
		t.Errorf("the heuristic score is not labelled:\n%s", stderr)
	}
}

// Small talk gets its answer on stdout and the same last line: elapsed
// time and cost.
func TestAskReplyLastLine(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if r.Node() == "coordinator" {
			return llmtest.JSON(map[string]string{"intent": "chat", "reply": "Hello! Ask me a research question.", "research_question": "", "clarifying_question": "", "instruction": ""})
		}
		return scripted
	}})
	vars["DEEPRESEARCH_LLM_PRICES"] = "fake=2.5/10"
	stdout, stderr := askCLI(t, vars, 0, "hi there, thanks!")
	if !strings.Contains(stdout, "Hello!") {
		t.Errorf("stdout = %q", stdout)
	}
	if last := lastLine(stderr); !regexp.MustCompile(`^replied in [0-9.]+m?s: \d+ tokens in \d+ requests, cost \$0\.\d+$`).MatchString(last) {
		t.Errorf("last line = %q", last)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// askCLI runs `deepresearch ask args...` on vars and fails the test unless
// it exits with code.
func askCLI(t *testing.T, vars map[string]string, code int, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if got := run(context.Background(), append([]string{"ask"}, args...), getenv(vars), strings.NewReader(""), &out, &errOut); got != code {
		t.Fatalf("exit %d, want %d\n%s", got, code, errOut.String())
	}
	return out.String(), errOut.String()
}

// plannerFailsOnce answers the planner's first call with first and every
// other call as scripted.
func plannerFailsOnce(first llmtest.Reply) func(*llmtest.Request, llmtest.Reply) llmtest.Reply {
	failed := false
	return func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if r.Node() == "planner" && !failed { // runs under the fake's lock
			failed = true
			return first
		}
		return scripted
	}
}
