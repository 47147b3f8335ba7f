package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// currentSchema connects with dsn and returns the schema it selects.
func currentSchema(t *testing.T, dsn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	defer conn.Close(context.Background())
	var s *string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s == nil {
		t.Fatalf("%s selects no existing schema", dsn)
	}
	return *s
}

// schemaExists asks the server (through BaseURL) whether schema exists.
func schemaExists(t *testing.T, schema string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// checkSchema runs Schema in a subtest, checks that the schema exists and is
// the one the returned DSN selects, and that it is gone once the subtest has
// ended.
func checkSchema(t *testing.T) {
	var schema string
	if !t.Run("schema", func(t *testing.T) {
		dsn := Schema(t)
		schema = currentSchema(t, dsn)
		if !strings.HasPrefix(schema, "t_") {
			t.Fatalf("%s selects schema %q, not a fresh one", dsn, schema)
		}
		if !schemaExists(t, schema) {
			t.Fatalf("schema %s does not exist during the test", schema)
		}
		// the search_path is what unqualified names resolve in
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE probe (id int)"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'probe'", schema).Scan(&n); err != nil || n != 1 {
			t.Fatalf("table probe in %s: n=%d err=%v", schema, n, err)
		}
	}) {
		return
	}
	if schema == "" {
		t.Skip("the subtest was skipped (no server)")
	}
	if schemaExists(t, schema) {
		t.Fatalf("schema %s still exists after its test ended", schema)
	}
}

func TestSchema(t *testing.T) { checkSchema(t) }

// TestSchemaKeyValueDSN: a key=value DEEPRESEARCH_TEST_DATABASE_URL works the
// same as a URL.
func TestSchemaKeyValueDSN(t *testing.T) {
	base := BaseURL()
	if strings.Contains(base, "://") {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		kv := []string{"host=" + u.Hostname()}
		if p := u.Port(); p != "" {
			kv = append(kv, "port="+p)
		}
		if u.User != nil {
			kv = append(kv, "user="+u.User.Username())
			if pw, ok := u.User.Password(); ok {
				kv = append(kv, "password="+pw)
			}
		}
		if db := strings.TrimPrefix(u.Path, "/"); db != "" {
			kv = append(kv, "dbname="+db)
		}
		for k, vs := range u.Query() {
			for _, v := range vs {
				kv = append(kv, fmt.Sprintf("%s=%s", k, v))
			}
		}
		base = strings.Join(kv, " ")
	}
	t.Setenv("DEEPRESEARCH_TEST_DATABASE_URL", base)
	if got := BaseURL(); got != base {
		t.Fatalf("BaseURL() = %q, want %q", got, base)
	}
	checkSchema(t)
}

func TestWithSearchPath(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u@h:5432/db?sslmode=disable", "postgres://u@h:5432/db?search_path=s1&sslmode=disable"},
		{"postgres://u@h/db?search_path=old", "postgres://u@h/db?search_path=s1"},
		{"host=h user=u dbname=db sslmode=disable", "host=h user=u dbname=db sslmode=disable search_path=s1"},
	} {
		if got := withSearchPath(t, c.dsn, "s1"); got != c.want {
			t.Errorf("withSearchPath(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

func TestBaseURLDefault(t *testing.T) {
	t.Setenv("DEEPRESEARCH_TEST_DATABASE_URL", "")
	if got := BaseURL(); got != DefaultURL {
		t.Fatalf("BaseURL() = %q, want %q", got, DefaultURL)
	}
}
