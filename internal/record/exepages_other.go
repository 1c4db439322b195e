//go:build !linux

package record

// trimExecutablePages: the recorder samples Linux only.
func trimExecutablePages() (before, after int64, err error) { return 0, 0, nil }

func dropExecutableCache() error { return nil }
