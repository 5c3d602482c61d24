package views

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the console's module: views imports none of its packages. Views
// receive view models built by the handlers, never domain objects.
const modulePath = "runr.dev/console"

// TestViewsImportNoDomainPackage parses every Go file of views (the generated
// *_templ.go included) and every .templ file, and fails on an import of the console's
// packages (store, ops, kube, agent, engine, helm, hub, …).
func TestViewsImportNoDomainPackage(t *testing.T) {
	goFiles, _ := filepath.Glob("*.go")
	if len(goFiles) == 0 {
		t.Fatal("no Go files found: run the test in the views directory")
	}
	fset := token.NewFileSet()
	for _, name := range goFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if isConsolePackage(path) {
				t.Errorf("%s imports %s: give the view a view model built by the handler instead", fset.Position(imp.Pos()), path)
			}
		}
	}
	// A .templ file is checked too, so that the rule holds before `make generate`.
	templImport := regexp.MustCompile(`"(` + regexp.QuoteMeta(modulePath) + `(?:/[^"]*)?)"`)
	for _, name := range templFiles(t) {
		src := readFile(t, name)
		for _, m := range templImport.FindAllStringSubmatchIndex(src, -1) {
			t.Errorf("%s:%d imports %s: give the view a view model built by the handler instead", name, lineOf(src, m[0]), src[m[2]:m[3]])
		}
	}
}

func isConsolePackage(path string) bool {
	return path == modulePath || strings.HasPrefix(path, modulePath+"/")
}

// Template rules: no status (or state, mode, kind, level, role) is compared with a
// string literal, and no permission is named by a string: the handlers decide statuses
// with the typed constants and fill Page.Can.
var templateRules = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\b\w*(?:Status|State|Mode|Kind|Level|Role)\)?\s*(?:==|!=)\s*"`), "compares a status with a string literal"},
	{regexp.MustCompile(`"[^"\n]*"\s*(?:==|!=)\s*[\w.]*(?:Status|State|Mode|Kind|Level|Role)\b`), "compares a status with a string literal"},
	{regexp.MustCompile(`switch\s+[\w.(]*(?:Status|State|Mode|Kind|Level|Role)\)?\s*\{\s*case\s+"`), "switches on a status with string literals"},
	{regexp.MustCompile(`\bcan\(\s*[\w.]+\s*,\s*"`), "names a permission with a string literal"},
	{regexp.MustCompile(`\.Can\(\s*"`), "names a permission with a string literal"},
}

// templateViolations lists what breaks the template rules in a template's source.
func templateViolations(src string) []string {
	var out []string
	for _, r := range templateRules {
		for _, m := range r.re.FindAllStringIndex(src, -1) {
			out = append(out, strconv.Itoa(lineOf(src, m[0]))+": "+r.why+": "+strings.TrimSpace(src[m[0]:m[1]]))
		}
	}
	return out
}

func TestTemplatesCompareNoStatusWithStringLiterals(t *testing.T) {
	for _, name := range templFiles(t) {
		for _, v := range templateViolations(readFile(t, name)) {
			t.Errorf("%s:%s", name, v)
		}
	}
}

// TestTemplateRules shows that the rules catch what they are for, and leave form
// values and navigation alone.
func TestTemplateRules(t *testing.T) {
	for _, tc := range []struct {
		src  string
		flag bool
	}{
		{`if r.ServingStatus == "not_installed" {`, true},
		{`if j.Status != "failed" {`, true},
		{`checked?={ string(r.Status) == "active" }`, true},
		{`if "failed" == d.Job.Status {`, true},
		{`if r.RedisMode == "external" {`, true},
		{`templ.KV("x", s.State == "current")`, true},
		{"switch d.Job.Status {\n\tcase \"succeeded\":", true},
		{`if can(p, "regions.manage") {`, true},
		{`if p.Can("users.view") {`, true},
		{`if r.ServingInstallable {`, false},
		{`if p.Can.RegionsManage && d.Region.Active {`, false},
		{`if s.State == WizardCurrent {`, false},
		{`checked?={ d.Form.V("registry_mode") == "external" }`, false},
		{`@navLink("/regions", "Knative Regions", p.Active == "regions")`, false},
		{`if r.Status != "" {`, true},
	} {
		if got := len(templateViolations(tc.src)) > 0; got != tc.flag {
			t.Errorf("%q: flagged %v, want %v", tc.src, got, tc.flag)
		}
	}
}

func templFiles(t *testing.T) []string {
	t.Helper()
	names, _ := filepath.Glob("*.templ")
	if len(names) == 0 {
		t.Fatal("no .templ files found: run the test in the views directory")
	}
	return names
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lineOf(src string, offset int) int { return strings.Count(src[:offset], "\n") + 1 }
