package sqlite_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"deepresearch/storage/sqlite"
)

func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, strconv.Itoa(i)+".db")})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
