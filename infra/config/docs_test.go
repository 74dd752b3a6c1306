package config_test

import (
	"bufio"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/infra/config"
)

// readVariables returns every variable Load reads, found by asking it:
// with nothing set, with tracing on (its exporter's settings are read only
// then) and under Lambda.
func readVariables() map[string]bool {
	read := map[string]bool{}
	for _, env := range []map[string]string{
		nil,
		{"OTEL_TRACES_EXPORTER": "otlp"},
		{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"},
	} {
		_, _ = config.Load(func(k string) string { read[k] = true; return env[k] })
	}
	return read
}

var variableName = regexp.MustCompile("`([A-Z][A-Z0-9_]*[A-Z0-9])`")

// tableVariables returns the variables named in the first column of the
// first markdown table under the heading, in file order.
func tableVariables(t *testing.T, path, heading string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		names              []string
		inSection, inTable bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !inSection:
			inSection = strings.TrimSpace(line) == heading
		case strings.HasPrefix(line, "|"):
			inTable = true
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			for _, m := range variableName.FindAllStringSubmatch(first, -1) {
				names = append(names, m[1])
			}
		case inTable:
			return names
		case strings.HasPrefix(line, "#"):
			t.Fatalf("%s: no table under %q", path, heading)
		}
	}
	if !inTable {
		t.Fatalf("%s: no table under %q", path, heading)
	}
	return names
}

// README's configuration table is the runner's settings as infra/config
// reads them: every RUNNER_ variable Load reads has a row, and every
// RUNNER_ row is one it reads.
func TestREADMEConfigurationTable(t *testing.T) {
	const where = "README.md's configuration table (## Configuration)"
	read := readVariables()
	rows := tableVariables(t, "../../README.md", "## Configuration")
	for _, v := range slices.Sorted(maps.Keys(read)) {
		if strings.HasPrefix(v, "RUNNER_") && !slices.Contains(rows, v) {
			t.Errorf("%s has no row for %s, which infra/config reads: add one", where, v)
		}
	}
	for _, v := range rows {
		if strings.HasPrefix(v, "RUNNER_") && !read[v] {
			t.Errorf("%s has a row for %s, which infra/config does not read: remove it or read it", where, v)
		}
	}
	if !slices.Contains(rows, "RUNNER_LAMBDA_MODE") || len(rows) < 20 {
		t.Errorf("the table parsed as %v: the test reads the wrong table", rows)
	}
}
