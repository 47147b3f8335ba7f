// Package jobs is the durable lease queue of the service: one table that
// holds research runs, received Slack envelopes and digest firings. A job
// has a kind and a key unique within it, a payload, and a state: ready,
// held by an owner until its lease ends, parked waiting for a person, done
// or failed. Queue is the interface; storage/sqlstore implements it on
// SQLite and Postgres (type Jobs), and its conformance suite holds both
// engines to the same rules. The comment
// on Queue says which method replaces which method of the three hand-made
// queues it supersedes.
//
// # Why our own table and not River
//
// We tried github.com/riverqueue/river v0.51.1 (with riverpgxv5 and
// riversqlite) in a scratch module against the same Postgres, on this
// two-core machine, and decided against it. River is well made and much
// faster at what it is built for: many short jobs. With its defaults a job
// waits p50 101 ms, p90 536 ms, p99 971 ms from insert to work (it fetches
// at most every 100 ms and polls every second); tuned (1 ms cooldown, 50 ms
// poll, 100 workers) p50 1.3 ms, p90 2.4 ms, p99 6.7 ms, and it drained
// 5,000 batch-inserted jobs at 14,600 jobs/s (99 jobs/s with the defaults).
// Our Postgres table does put+claim+finish of one job in 0.84-0.96 ms (three
// statements), and 4 concurrent claimers claim and finish at 0.35-0.37 ms a
// job, about 2,800 jobs/s; SQLite 0.94-1.07 ms and 0.68-0.72 ms; memory
// 2 µs and 0.11 ms. We see tens of jobs a minute, so speed decides nothing.
//
// What decides is the shape of our jobs. A research run lasts minutes and
// keeps its lease with heartbeats, so that a killed process's run is taken
// over within about two lease periods (30 s leases: about a minute). River
// has no lease and no heartbeat: its rescuer re-queues a job whose attempt
// started more than RescueStuckJobsAfter ago (default one hour, and it must
// exceed the job timeout), checking every 30 s on the elected leader, then
// its scheduler makes the retry available every 5 s. With RescueStuckJobsAfter
// set to 10 s we measured 19.0 s and 19.9 s from SIGKILL to the job being
// worked again. To avoid rescuing runs that are still working, that setting
// would have to be longer than our longest run, and a crashed run would wait
// at least that long. River also has no state that a running job can enter
// to wait for a person. The nearest fit is to cancel the job and have the
// decision call JobRetry, but JobRetry is not a compare-and-set. When we
// called it a second time on the finished job, the job became available
// again and the worker ran the decision twice. (InsertOpts.Pending exists,
// but only at insert time.) Exactly-once approval would still need a table
// of our own. The rest could be modelled: unique inserts for the inbox's
// dedupe (only while the done row is retained, 24 h by default),
// MaxAttempts for the bound on pickups, and JobSnooze for a graceful
// hand-back that gives its attempt back.
//
// Cost: River adds 10 modules to our build (six of its own, four tidwall
// JSON modules), 50 packages and about 35,800 lines of Go that would be
// compiled into the binary (30,300 of them River's). Its SQLite driver
// works with modernc.org/sqlite (migrations, insert and work ran; p50
// 101 ms and p90 854 ms insert to work, by polling, since SQLite has no
// LISTEN/NOTIFY). Its queries read the database clock unless a test time
// generator is configured; ours take every time from the caller. So we keep
// one small table per engine. We would look at River again only for a
// workload of many short, retryable, unattended jobs.
package jobs
