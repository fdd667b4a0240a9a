module binlog.example/goimpl

go 1.22
