package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"deepresearch/jobs"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/storetest"
)

func openJobs(t testing.TB) jobs.Queue {
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "jobs.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return sqlite.NewJobs(s)
}

func TestJobsConformance(t *testing.T) {
	storetest.Jobs(t, openJobs)
}

func BenchmarkJobsClaimFinish(b *testing.B) {
	storetest.BenchJobs(b, openJobs)
}

// TestJobsTwoHandles opens the file twice, as two processes would.
func TestJobsTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	open := func() jobs.Queue {
		s, err := sqlite.Open(context.Background(), sqlite.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return sqlite.NewJobs(s)
	}
	storetest.JobsTwoHandles(t, open(), open())
}
