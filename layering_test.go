package goverbs_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/goverbs/goverbs"

// layers lists, for each package of the module (relative path; "cmd/" covers
// every command), the module packages it may import and the third-party
// modules it may use. This is the import graph of doc/design.md; a package that
// is not listed fails the test, so a new package must take its place here.
var layers = map[string]struct {
	internal   []string
	thirdParty []string
}{
	"":                          {},
	"cmd/":                      {internal: []string{"verbs", "conn", "internal/perftest", "internal/pingpong", "internal/devinfo", "internal/wire", "internal/capture", "internal/toolflag"}},
	"internal/pingpong":         {internal: []string{"verbs", "internal/oob", "internal/toolflag"}},
	"internal/oob":              {internal: []string{"verbs"}},
	"internal/devinfo":          {internal: []string{"verbs"}},
	"internal/perftest":         {internal: []string{"verbs", "internal/oob", "internal/toolflag"}},
	"internal/toolflag":         {},                                            // standard library only
	"internal/capture":          {internal: []string{"internal/wire", "conn"}}, // standard library on the write side
	"internal/capture/pcapread": {internal: []string{"internal/capture", "internal/wire"}, thirdParty: []string{"github.com/gopacket/gopacket"}},
	"verbs":                     {internal: []string{"internal/engine", "internal/ib", "internal/mem", "internal/capture", "conn"}},
	"verbs/verbstest":           {internal: []string{"verbs", "conn", "internal/leakcheck"}},
	"internal/engine":           {internal: []string{"internal/wire", "internal/mem", "internal/queue", "internal/ib", "conn"}},
	"internal/mem":              {internal: []string{"internal/ib"}, thirdParty: []string{"golang.org/x/sys"}},
	"conn":                      {thirdParty: []string{"golang.org/x/net", "golang.org/x/sys"}},
	"conn/memconn":              {internal: []string{"conn"}},
	"internal/leakcheck":        {}, // test helper, standard library only
	"internal/golden":           {}, // test helper, standard library only
	"internal/clienttest":       {}, // test helper, standard library only
	"internal/wire":             {}, // standard library only
	"internal/ib":               {},
	"internal/queue":            {},
}

func TestImportDirections(t *testing.T) {
	// -pgo=off: with cmd/goverbs/default.pgo, go list names the imports of
	// the command as the variants built for it ("bufio [.../cmd/goverbs]").
	out, err := exec.Command("go", "list", "-pgo=off", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		rule, ok := layerOf(pkg)
		if !ok {
			t.Errorf("package %q has no entry in the layering table", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.Contains(strings.Split(imp, "/")[0], ".") {
				continue // standard library
			}
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				if !hasPrefixIn(rel, rule.internal) {
					t.Errorf("%s imports %s: not allowed by the layering", fields[0], imp)
				}
				continue
			}
			if !hasPrefixIn(imp, rule.thirdParty) {
				t.Errorf("%s imports third-party %s: not allowed", fields[0], imp)
			}
		}
	}
}

func layerOf(pkg string) (struct{ internal, thirdParty []string }, bool) {
	if strings.HasPrefix(pkg, "cmd/") {
		pkg = "cmd/"
	}
	r, ok := layers[pkg]
	return struct{ internal, thirdParty []string }(r), ok
}

// hasPrefixIn reports whether path is one of the packages (or below one of
// the modules) in list.
func hasPrefixIn(path string, list []string) bool {
	for _, p := range list {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// TestVerbsCarriesNoPacketLibrary: a program that imports verbs gets the
// capture writer (standard library only), not the decoder's gopacket.
func TestVerbsCarriesNoPacketLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./verbs").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/gopacket/") {
			t.Errorf("verbs depends on %s", dep)
		}
	}
}
