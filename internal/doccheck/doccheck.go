// Package doccheck finds the Go blocks of Markdown files and turns each into a Go file that
// compiles exactly when the block does, so that a test can build every block of the README and
// the guides against the repository's own modules.
//
// A block is a fence opened by "```go". It is one of:
//   - a complete file, when it starts with a package clause: compiled as it stands;
//   - imports alone: they belong to the next block of the same Markdown file;
//   - declarations (funcs, types, vars): put in a package of their own;
//   - statements: the body of a function. When the line right before the fence is a comment
//     "<!-- excerpt: PARAMS -->", PARAMS become that function's parameters, so that an
//     excerpt can use what the text around it made ("ctx context.Context, c *redlock.Client").
//
// A block whose fence follows the comment "<!-- from: PATH -->" is not compiled: it must be a
// part of the Go file PATH (relative to the repository's root), line for line, leading
// whitespace aside, and that file is compiled and run by go test.
//
// Blocks other than complete files get the imports that their text names from a fixed table
// (context., redlock., redis., ...) and that they do not import themselves. Every file starts
// with a //line directive, so that the compiler reports errors at the block's line in the
// Markdown file.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"regexp"
	"slices"
	"strings"
)

// A Block is one Go block of a Markdown file.
type Block struct {
	File    string // the Markdown file, as given to Extract
	Line    int    // the line of the block's first line of code, from 1
	Code    string // the block's text
	Params  string // the excerpt's parameters, from its marker
	From    string // the Go file the block is part of, from its marker; "" when compiled
	Imports string // an import-only block that came right before it, "" for none
}

var (
	fenceGo = regexp.MustCompile("^```go\\s*$")
	fence   = regexp.MustCompile("^```")
	marker  = regexp.MustCompile(`^<!--\s*(excerpt|from):\s*(.*?)\s*-->\s*$`)
)

// Extract returns the Go blocks of md, a Markdown file named file, with import-only blocks
// folded into the block that follows them.
func Extract(file string, md []byte) ([]Block, error) {
	var (
		blocks  []Block
		cur     *Block
		code    strings.Builder
		prev    string
		imports string
		n       int
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && fenceGo.MatchString(line):
			cur = &Block{File: file, Line: n + 1}
			if m := marker.FindStringSubmatch(prev); m != nil && m[1] == "excerpt" {
				cur.Params = m[2]
			} else if m != nil {
				cur.From = m[2]
			}
			code.Reset()
		case cur != nil && fence.MatchString(line):
			cur.Code = code.String()
			if importsOnly(cur.Code) {
				if imports != "" {
					return nil, fmt.Errorf("%s:%d: two blocks of imports in a row", file, cur.Line)
				}
				imports = cur.Code
			} else {
				cur.Imports, imports = imports, ""
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a Go block that is never closed", file, cur.Line)
	}
	if imports != "" {
		return nil, fmt.Errorf("%s: a block of imports that no Go block follows", file)
	}
	return blocks, nil
}

// importsOnly reports whether code is nothing but import declarations.
func importsOnly(code string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, parser.ImportsOnly)
	if err != nil || len(f.Imports) == 0 {
		return false
	}
	// ImportsOnly stops after the imports: the whole text must have been imports.
	all, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
	return err == nil && len(all.Decls) == len(f.Decls)
}

// known are the packages a block may name without importing them.
var known = map[string]string{
	"context":        "context",
	"errors":         "errors",
	"fmt":            "fmt",
	"http":           "net/http",
	"log":            "log",
	"os":             "os",
	"slog":           "log/slog",
	"strings":        "strings",
	"sync":           "sync",
	"testing":        "testing",
	"time":           "time",
	"clock":          "github.com/quorumlock/redlock/clock",
	"redlock":        "github.com/quorumlock/redlock/redlock",
	"doctor":         "github.com/quorumlock/redlock/redlock/doctor",
	"driver":         "github.com/quorumlock/redlock/redlock/driver",
	"goredisnode":    "github.com/quorumlock/redlock/redlock/goredisnode",
	"locktrace":      "github.com/quorumlock/redlock/redlock/locktrace",
	"redlockgocron":  "github.com/quorumlock/redlock/redlockgocron",
	"redlockotel":    "github.com/quorumlock/redlock/redlockotel",
	"redlockrueidis": "github.com/quorumlock/redlock/redlockrueidis",
	"redlocktest":    "github.com/quorumlock/redlock/redlocktest",
	"redlockvalkey":  "github.com/quorumlock/redlock/redlockvalkey",
	"gocron":         "github.com/go-co-op/gocron/v2",
	"miniredis":      "github.com/alicebob/miniredis/v2",
	"redis":          "github.com/redis/go-redis/v9",
	"rueidis":        "github.com/redis/rueidis",
	"valkey":         "github.com/valkey-io/valkey-go",
	"metric":         "go.opentelemetry.io/otel/metric",
	"trace":          "go.opentelemetry.io/otel/trace",
}

// named returns the import paths of the known packages that src names as "name.".
func named(src string) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(src)), []byte(src), nil, 0)
	var paths []string
	last := ""
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && known[last] != "" && !slices.Contains(paths, known[last]) {
			paths = append(paths, known[last])
		}
		last = ""
		if tok == token.IDENT {
			last = lit
		}
	}
	slices.Sort(paths)
	return paths
}

// Source returns a Go file of package pkg that compiles exactly when b does; path is how the
// //line directives name b's Markdown file.
func Source(b Block, pkg, path string) []byte {
	var out strings.Builder
	at := func(line int) { fmt.Fprintf(&out, "//line %s:%d\n", path, line) }
	if strings.HasPrefix(strings.TrimSpace(stripComments(b.Code)), "package ") {
		at(b.Line)
		out.WriteString(b.Code)
		return []byte(out.String())
	}
	fmt.Fprintf(&out, "package %s\n\n", pkg)
	out.WriteString(b.Imports)
	own := imported(b.Imports + "\n" + b.Code)
	var paths []string
	for _, p := range named(b.Params + "\n" + b.Code) {
		if !own[p] {
			paths = append(paths, p)
		}
	}
	if len(paths) > 0 {
		out.WriteString("import (\n")
		for _, p := range paths {
			fmt.Fprintf(&out, "\t%q\n", p)
		}
		out.WriteString(")\n")
	}
	out.WriteString("\n")
	if b.Params == "" && declarations(out.String(), b.Code) {
		at(b.Line)
		out.WriteString(b.Code)
		return []byte(out.String())
	}
	if b.Params != "" {
		at(b.Line - 2) // the marker, right before the fence
	}
	fmt.Fprintf(&out, "func _(%s) {\n", b.Params)
	at(b.Line)
	out.WriteString(b.Code)
	out.WriteString("}\n")
	return []byte(out.String())
}

// imported returns the import paths that code, a sequence of import declarations perhaps
// followed by others, names.
func imported(code string) map[string]bool {
	out := map[string]bool{}
	f, _ := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, parser.ImportsOnly)
	if f != nil {
		for _, im := range f.Imports {
			out[strings.Trim(im.Path.Value, "`\"")] = true
		}
	}
	return out
}

// PartOf reports whether code is a part of src, line for line, each line's leading and
// trailing whitespace aside.
func PartOf(code, src string) bool {
	trim := func(s string) []string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimSpace(l)
		}
		return lines
	}
	want, have := trim(code), trim(src)
	for i := 0; i+len(want) <= len(have); i++ {
		if slices.Equal(want, have[i:i+len(want)]) {
			return true
		}
	}
	return false
}

// declarations reports whether code parses as top-level declarations after head.
func declarations(head, code string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", head+code, parser.SkipObjectResolution)
	return err == nil
}

// stripComments returns code without its leading comment lines.
func stripComments(code string) string {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "//") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return ""
}
