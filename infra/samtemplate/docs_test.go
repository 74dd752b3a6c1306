package samtemplate_test

import (
	"bufio"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const deployDoc = "../../docs/deploy.md"

var codeSpan = regexp.MustCompile("`([^`]+)`")

// firstColumn returns the code spans in the first column of the first
// markdown table after the line that starts with after.
func firstColumn(t *testing.T, path, after string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		names          []string
		found, inTable bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !found:
			found = strings.HasPrefix(line, after)
		case strings.HasPrefix(line, "|"):
			inTable = true
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
				names = append(names, m[1])
			}
		case inTable:
			return names
		}
	}
	if !inTable {
		t.Fatalf("%s: no table after %q", path, after)
	}
	return names
}

// docs/deploy.md's resource table lists every resource template.yaml
// declares (and those SAM makes, which it marks so).
func TestDocsResourceTable(t *testing.T) {
	v := load(t, templatePath, nil)
	rows := firstColumn(t, deployDoc, "`template.yaml` (AWS SAM) creates:")
	for _, id := range slices.Sorted(maps.Keys(v.tmpl.Resources)) {
		if !slices.Contains(rows, id) {
			t.Errorf("docs/deploy.md's resource table (after \"`template.yaml` (AWS SAM) creates:\") has no row for %s, a resource of template.yaml", id)
		}
	}
	for _, id := range []string{"RunnerFunctionUrl", "RunnerFunctionRole", "RunnerFunctionAliaslive"} {
		if !slices.Contains(rows, id) {
			t.Errorf("docs/deploy.md's resource table has no row for %s, which SAM makes", id)
		}
	}
}

// docs/deploy.md's table of the variables the template sets is the
// function's Environment.Variables, no more, no less.
func TestDocsEnvironmentTable(t *testing.T) {
	env := load(t, templatePath, nil).env()
	rows := firstColumn(t, deployDoc, "### Environment variables")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !slices.Contains(rows, k) {
			t.Errorf("docs/deploy.md's table under \"### Environment variables\" has no row for %s, which template.yaml sets", k)
		}
	}
	for _, k := range rows {
		if _, ok := env[k]; !ok {
			t.Errorf("docs/deploy.md's table under \"### Environment variables\" lists %s, which template.yaml does not set", k)
		}
	}
}
