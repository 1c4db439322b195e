package prometheus

import (
	"context"

	"github.com/memdoctor/memdoctor/internal/compare"
	"github.com/memdoctor/memdoctor/internal/prom"
	"github.com/memdoctor/memdoctor/internal/usecase/history"
)

// ComparePrometheus compares two label selectors' hosts over the window
// (each selector is canonicalised first; flags name them in errors).
func ComparePrometheus(ctx context.Context, c *prom.Client, a, b, match string, win history.Window) (*compare.Result, error) {
	va, vb, err := compare.PromGroups(ctx, c, a, b, match, win.To, win.Range())
	if err != nil {
		return nil, err
	}
	return compare.Compare(a, b, "host", va, vb), nil
}
