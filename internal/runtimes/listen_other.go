//go:build !linux

package runtimes

import "errors"

// ownListening needs Linux's socket diagnostics.
func ownListening() ([]listenSock, error) {
	return nil, errors.New("not Linux")
}
