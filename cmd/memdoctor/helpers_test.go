package main

import (
	"encoding/json"
	"net"
)

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
