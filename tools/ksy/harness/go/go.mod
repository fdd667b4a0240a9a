module openbinlog/ksyharness

go 1.23.0

require github.com/kaitai-io/kaitai_struct_go_runtime v0.11.0

require golang.org/x/text v0.28.0 // indirect
