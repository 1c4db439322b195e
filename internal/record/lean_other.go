//go:build !linux

package record

import "errors"

func madviseDontNeed(uintptr, uintptr) error {
	return errors.New("releasing pages needs Linux")
}
