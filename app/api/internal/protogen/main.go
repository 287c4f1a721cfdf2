// Command protogen compiles .proto files without protoc and runs protoc
// plugins on them, the way protoc does: it parses and links the files with
// github.com/bufbuild/protocompile (pure Go), hands each plugin a
// CodeGeneratorRequest on stdin and writes the files of its response.
// Plugins run as `go tool NAME`, so their versions are the ones go.mod pins.
//
//	protogen -I proto -out ../.. -plugin protoc-gen-go=module=M inof/v1/inof.proto
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/pluginpb"
)

// plugins collects repeated -plugin NAME=PARAMETER flags.
type plugins []string

func (p *plugins) String() string     { return strings.Join(*p, ",") }
func (p *plugins) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var (
		importDir = flag.String("I", ".", "directory the .proto import paths are relative to")
		outDir    = flag.String("out", ".", "directory the generated files are written under")
		ps        plugins
	)
	flag.Var(&ps, "plugin", "plugin to run as `NAME=PARAMETER` (repeatable), e.g. protoc-gen-go=paths=source_relative")
	flag.Parse()
	if err := run(context.Background(), *importDir, *outDir, ps, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, importDir, outDir string, ps []string, files []string) error {
	if len(files) == 0 || len(ps) == 0 {
		return errors.New("need at least one -plugin and one .proto file")
	}
	req, err := request(ctx, importDir, files)
	if err != nil {
		return err
	}
	for _, p := range ps {
		name, param, _ := strings.Cut(p, "=")
		req.Parameter = proto.String(param)
		if err := generate(ctx, name, req, outDir); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// request compiles files and returns the CodeGeneratorRequest protoc would
// send: every file they need, dependencies first, with source info (so the
// generated code keeps the comments).
func request(ctx context.Context, importDir string, files []string) (*pluginpb.CodeGeneratorRequest, error) {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{importDir}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(ctx, files...)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: files}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(fd))
	}
	for _, fd := range compiled {
		add(fd)
	}
	return req, nil
}

// generate runs one plugin and writes the files it returns.
func generate(ctx context.Context, plugin string, req *pluginpb.CodeGeneratorRequest, outDir string) error {
	in, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "tool", plugin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("run: %w: %s", err, stderr.String())
	}
	var resp pluginpb.CodeGeneratorResponse
	if err := proto.Unmarshal(out.Bytes(), &resp); err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.Error != nil {
		return errors.New(resp.GetError())
	}
	for _, f := range resp.File {
		if f.GetInsertionPoint() != "" {
			return fmt.Errorf("%s: insertion points are not supported", f.GetName())
		}
		path := filepath.Join(outDir, filepath.FromSlash(f.GetName()))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(f.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
