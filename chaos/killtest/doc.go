// Package killtest runs the real deepresearch binary (`deepresearch serve`)
// as child processes against in-test fakes of Slack (bot/slackfake), an
// OpenAI-compatible LLM (agent/llm/llmtest), SearXNG and web pages, on
// SQLite and Postgres, and checks the bot's promises end to end:
//
//   - TestKillSQLite, TestKillPostgres: research runs started by mentions
//     while the serve processes are SIGKILLed at random moments and
//     restarted. Every thread ends with exactly one report and one final
//     status message, no approval is lost or applied twice, and no LLM call
//     that completed (and was stored) is made again.
//   - TestReplicasPostgres: three serve processes share one Postgres and the
//     Socket Mode load; every mention is handled once, and every digest
//     firing runs once.
//   - TestLoadReplicasPostgres: 30 (long: 1,000) concurrent runs with
//     simulated LLM latency across three serve processes on one Postgres;
//     every thread gets one report and one Done message, each process's
//     DB connections stay within its pool and its goroutines return to
//     their baseline. It prints RSS, goroutines, connections and Slack call
//     rates (FIGURES load3).
//
// The short versions run in `go test ./...` (and `make chaos`); CHAOS_LONG=1
// runs the long ones (`make chaos-long`). Everything is in the test files.
package killtest
