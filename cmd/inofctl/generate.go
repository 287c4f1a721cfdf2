package main

//go:generate go run ./internal/gendoc ../../docs/cli.md
