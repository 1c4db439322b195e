package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
)

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// httpGet fetches url and returns the body.
func httpGet(url string) (string, error) {
	resp, err := http.Get(url) //nolint:gosec // a test server on 127.0.0.1
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
