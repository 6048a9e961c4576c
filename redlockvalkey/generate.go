package redlockvalkey

//go:generate go run ./internal/twin
