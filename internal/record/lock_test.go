package record

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memdoctor/memdoctor/internal/store"
)

// One recorder per store: a second one on the same file is refused, said
// with what to do, and still recognisable as store.ErrLocked.
func TestSecondRecorderRefused(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "md.db")
	r, err := New(Config{DBPath: db, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	_, err = New(Config{DBPath: db, Interval: time.Second})
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "one recorder per store") || !strings.Contains(err.Error(), "--db") {
		t.Errorf("second recorder: %v; want store.ErrLocked, saying one recorder per store and --db", err)
	}
}
