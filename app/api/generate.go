package api

// The generated code in v1/ is committed; `make generate` (go generate)
// rebuilds it from proto/ with the plugins pinned in go.mod, no protoc.
//go:generate go run ./internal/protogen -I proto -out ../.. -plugin protoc-gen-go=module=github.com/openinof/inof -plugin protoc-gen-go-grpc=module=github.com/openinof/inof inof/v1/inof.proto
