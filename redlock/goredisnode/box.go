package goredisnode

import "github.com/quorumlock/redlock/redlock/driver"

// boxedOf returns call's arguments as go-redis takes them, each boxed, made once for every
// go-redis node of the round: EVALSHA's, or SET's.
func boxedOf(call *driver.Call) []any {
	return call.Values(box)
}

// box appends call's arguments to room: SET's, or EVALSHA's.
func box(call *driver.Call, room []any) []any {
	if call.Script == nil {
		return append(room, "set", call.Keys[0], call.Args[0], "px", call.TTL.Milliseconds(), "nx")
	}
	var sha any = call.Script.SHA1()
	if s, ok := call.Script.(interface{ SHA1Arg() any }); ok {
		sha = s.SHA1Arg() // boxed once for the process
	}
	return appendArgs(room, "evalsha", sha, call.Keys, call.Args)
}

// boxArgs returns EVALSHA's or EVAL's arguments: the verb, the script or its SHA1, the number
// of keys, the keys and the arguments.
func boxArgs(verb, script string, keys, args []string) []any {
	return appendArgs(make([]any, 0, 3+len(keys)+len(args)), verb, script, keys, args)
}

// appendArgs appends the arguments of boxArgs to a, boxing a string that is also a key (a
// lock's name in an announcement) once.
func appendArgs(a []any, verb string, script any, keys, args []string) []any {
	a = append(a, verb, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	for _, s := range args {
		var v any
		for i, k := range keys {
			if k == s && s != "" {
				v = a[3+i]
				break
			}
		}
		if v == nil {
			v = s
		}
		a = append(a, v)
	}
	return a
}
