package doccheck_test

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/internal/doccheck"
)

// modules are the repository's modules that a Go block may import, by directory.
var modules = map[string]string{
	".":              "github.com/quorumlock/redlock",
	"redlockotel":    "github.com/quorumlock/redlock/redlockotel",
	"redlockrueidis": "github.com/quorumlock/redlock/redlockrueidis",
	"redlockvalkey":  "github.com/quorumlock/redlock/redlockvalkey",
	"redlockgocron":  "github.com/quorumlock/redlock/redlockgocron",
}

// TestDocsCompile builds every Go block of every Markdown file of the repository, in a
// module of its own that requires the repository's modules from this work tree, and vets
// them. Every module it uses is one the repository's modules require: once their own tests
// or builds have put them in the module cache, it needs no network.
func TestDocsCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []doccheck.Block
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".md" {
			return nil
		}
		md, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		bs, err := doccheck.Extract(path, md)
		blocks = append(blocks, bs...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("no Go block found under", root)
	}
	var compiled []doccheck.Block
	for _, b := range blocks {
		if b.From == "" {
			compiled = append(compiled, b)
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, b.From))
		if err != nil {
			t.Errorf("%s:%d: %v", rel(root, b.File), b.Line, err)
		} else if !doccheck.PartOf(b.Code, string(src)) {
			t.Errorf("%s:%d: the block is not a part of %s, as its marker says", rel(root, b.File), b.Line, b.From)
		}
	}
	out, err := vet(t, root, compiled)
	if err != nil {
		t.Fatalf("Go blocks of the Markdown files do not compile (%v):\n%s", err, strings.ReplaceAll(out, root+"/", ""))
	}
	t.Logf("%d Go blocks compile, %d are parts of Go files", len(compiled), len(blocks)-len(compiled))
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}

// TestErrorsPointAtTheMarkdown checks that a block that does not compile is reported at its
// Markdown file and line.
func TestErrorsPointAtTheMarkdown(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	md := "# A guide\n\n<!-- excerpt: c *redlock.Client -->\n```go\nlock, err := c.TryLock(context.Background(), \"k\", time.Second)\n_ = err\n```\n"
	bs, err := doccheck.Extract("/guide.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	out, err := vet(t, root, bs)
	if err == nil {
		t.Fatalf("a block with an unused variable compiled:\n%s", doccheck.Source(bs[0], "p", "/guide.md"))
	}
	if !strings.Contains(out, "/guide.md:5") || !strings.Contains(out, "declared and not used: lock") {
		t.Fatalf("the error does not name the Markdown line, /guide.md:5:\n%s", out)
	}
}

func TestExtract(t *testing.T) {
	md := strings.Join([]string{
		"Some text.", // 1
		"```go",
		"package main", // 3
		"func main() {}",
		"```",
		"```go",
		"import \"time\"", // 7
		"```",
		"<!-- excerpt: ctx context.Context -->",
		"```go",
		"time.Sleep(time.Second)", // 11
		"```",
		"```sh",
		"go test",
		"```",
	}, "\n")
	bs, err := doccheck.Extract("x.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 {
		t.Fatalf("got %d blocks, want 2: %+v", len(bs), bs)
	}
	if bs[0].Line != 3 || bs[0].Params != "" || bs[0].Imports != "" {
		t.Errorf("first block: %+v", bs[0])
	}
	if bs[1].Line != 11 || bs[1].Params != "ctx context.Context" || bs[1].Imports != "import \"time\"\n" {
		t.Errorf("second block: %+v", bs[1])
	}
	src := string(doccheck.Source(bs[1], "p", "x.md"))
	for _, want := range []string{"import \"time\"", "func _(ctx context.Context) {\n//line x.md:11\ntime.Sleep"} {
		if !strings.Contains(src, want) {
			t.Errorf("the source lacks %q:\n%s", want, src)
		}
	}
	if !doccheck.PartOf("a := 1\n\tb := 2\n", "func f() {\n\ta := 1\n\tb := 2\n}\n") {
		t.Error("PartOf: lines of a function body, indented otherwise, are not found")
	}
	if doccheck.PartOf("a := 1\nb := 2\n", "a := 1\nc := 3\nb := 2\n") {
		t.Error("PartOf: lines apart are taken for a part")
	}
	if _, err := doccheck.Extract("y.md", []byte("```go\nx := 1\n")); err == nil {
		t.Error("an unclosed block was not an error")
	}
}

// vet writes each block as a package of a module that uses the repository's modules in root,
// and runs go vet over them. It returns go vet's output.
func vet(t *testing.T, root string, blocks []doccheck.Block) (string, error) {
	t.Helper()
	dir := t.TempDir()
	var mod strings.Builder
	mod.WriteString("module doccheck.test\n\ngo 1.26.0\n\nrequire (\n")
	// Every module the repository's modules require, at the highest version any requires, so
	// that the go command has nothing to look up.
	versions := map[string]string{}
	var sum []string
	for _, d := range slices.Sorted(maps.Keys(modules)) {
		fmt.Fprintf(&mod, "\t%s v0.0.0\n", modules[d])
		b, err := os.ReadFile(filepath.Join(root, d, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		for path, v := range requires(string(b)) {
			if !strings.HasPrefix(path, modules["."]) && newer(v, versions[path]) {
				versions[path] = v
			}
		}
		b, err = os.ReadFile(filepath.Join(root, d, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		sum = append(sum, strings.Split(string(b), "\n")...)
	}
	for _, path := range slices.Sorted(maps.Keys(versions)) {
		fmt.Fprintf(&mod, "\t%s %s\n", path, versions[path])
	}
	mod.WriteString(")\n\nreplace (\n")
	for _, d := range slices.Sorted(maps.Keys(modules)) {
		fmt.Fprintf(&mod, "\t%s => %s\n", modules[d], filepath.Join(root, d))
	}
	mod.WriteString(")\n")
	slices.Sort(sum)
	sum = slices.Compact(sum)
	write(t, filepath.Join(dir, "go.mod"), mod.String())
	write(t, filepath.Join(dir, "go.sum"), strings.TrimSpace(strings.Join(sum, "\n"))+"\n")
	for i, b := range blocks {
		pkg := fmt.Sprintf("p%03d", i)
		write(t, filepath.Join(dir, pkg, "block.go"), string(doccheck.Source(b, pkg, b.File)))
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gobin, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// requires returns the modules a go.mod file requires, with their versions.
func requires(gomod string) map[string]string {
	out := map[string]string{}
	block := false
	for _, line := range strings.Split(gomod, "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "require" && f[1] == "(":
			block = true
		case block && len(f) == 1 && f[0] == ")":
			block = false
		case block && len(f) == 2:
			out[f[0]] = f[1]
		case len(f) == 3 && f[0] == "require":
			out[f[1]] = f[2]
		}
	}
	return out
}

// newer reports whether the semantic version v is higher than w ("" is lowest).
func newer(v, w string) bool {
	if w == "" {
		return true
	}
	split := func(s string) ([3]int, string) {
		s = strings.TrimPrefix(s, "v")
		s, _, _ = strings.Cut(s, "+")
		core, pre, _ := strings.Cut(s, "-")
		var n [3]int
		for i, p := range strings.SplitN(core, ".", 3) {
			fmt.Sscan(p, &n[i])
		}
		return n, pre
	}
	a, ap := split(v)
	b, bp := split(w)
	if a != b {
		return slices.Compare(a[:], b[:]) > 0
	}
	switch {
	case ap == "" || bp == "":
		return ap == "" && bp != ""
	default:
		return ap > bp
	}
}
