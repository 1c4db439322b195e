//go:build !linux || (!amd64 && !arm64)

package leaktrace

import (
	"context"
	"fmt"
	"runtime"
)

// Run is not available on this architecture: the programs read the
// registers of the amd64 and arm64 ABIs only.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if err := opt.check(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: no probes for %s; %s", ErrUnavailable, runtime.GOARCH, fallback)
}
