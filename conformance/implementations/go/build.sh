#!/bin/sh
# Builds the Go testee into build/conformance/go/binlog-go at the repository
# root. Go's build cache makes a rebuild of unchanged sources fast.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out="$root/build/conformance/go"
mkdir -p "$out"
cd "$here"
go vet ./...
go build -trimpath -buildvcs=false -o "$out/binlog-go" ./cmd/binlog-go
