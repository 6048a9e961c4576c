// Package mixednodes holds only tests: Clients whose nodes are go-redis, rueidis and valkey-go
// clients at once, run on real servers. It is a module of its own so that neither the library
// nor an adapter module depends on the other clients.
package mixednodes
