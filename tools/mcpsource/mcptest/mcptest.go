// Package mcptest finds the real MCP server this project's tests run
// against: the reference filesystem server
// (@modelcontextprotocol/server-filesystem), which .ci/run installs from
// the npm registry under .ci/mcp.
package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FilesystemServer is the server's command, for a test in a package two
// levels below the repository's root (DEEPRESEARCH_TEST_MCP_FILESYSTEM
// names another). A missing server, or node, skips the test outside CI and
// fails it under CI=true.
func FilesystemServer(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("DEEPRESEARCH_TEST_MCP_FILESYSTEM")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", ".ci", "mcp", "node_modules", ".bin", "mcp-server-filesystem"))
	}
	_, statErr := os.Stat(bin)
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		msg := "the MCP filesystem server is not installed (run .ci/run, or npm install --prefix .ci/mcp @modelcontextprotocol/server-filesystem)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v %v", msg, statErr, nodeErr)
		}
		t.Skipf("%s: %v %v", msg, statErr, nodeErr)
	}
	return bin
}
