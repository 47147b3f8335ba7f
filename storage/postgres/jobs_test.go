package postgres_test

import (
	"context"
	"testing"

	"deepresearch/jobs"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlstore"
	"deepresearch/storage/storetest"
)

func openJobs(t testing.TB, dsn string) *sqlstore.Jobs {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxConns: 8})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return postgres.NewJobs(s)
}

// Each subtest gets a fresh schema; without a server they skip, unless CI
// is set, when they fail.
func TestJobsConformance(t *testing.T) {
	storetest.Jobs(t, func(t testing.TB) jobs.Queue { return openJobs(t, pgtest.Schema(t)) })
}

func TestJobsTwoHandles(t *testing.T) {
	dsn := pgtest.Schema(t)
	storetest.JobsTwoHandles(t, openJobs(t, dsn), openJobs(t, dsn))
}

func BenchmarkJobsClaimFinish(b *testing.B) {
	storetest.BenchJobs(b, func(t testing.TB) jobs.Queue { return openJobs(t, pgtest.Schema(t)) })
}
