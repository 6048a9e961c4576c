module github.com/quorumlock/redlock/internal/mixednodes

go 1.26.0

replace (
	github.com/quorumlock/redlock => ../..
	github.com/quorumlock/redlock/redlockrueidis => ../../redlockrueidis
	github.com/quorumlock/redlock/redlockvalkey => ../../redlockvalkey
)

require (
	github.com/quorumlock/redlock v0.0.0-00010101000000-000000000000
	github.com/quorumlock/redlock/redlockrueidis v0.0.0-00010101000000-000000000000
	github.com/quorumlock/redlock/redlockvalkey v0.0.0-00010101000000-000000000000
	github.com/redis/rueidis v1.0.79
	github.com/valkey-io/valkey-go v1.0.79
	go.uber.org/goleak v1.3.0
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
