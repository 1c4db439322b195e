package store

import (
	"context"
	"database/sql"
	"sync"
)

// readStmts are the statements of the read path, each prepared once on
// the reading connections and bound to each read transaction from there:
// a diagnosis of many instances runs the same few queries for each, and
// parsing their text again every time took about a third of its time
// (10,000 instances of one sample).
type readStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns query prepared on db, once.
func (r *readStmts) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.m[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if r.m == nil {
		r.m = map[string]*sql.Stmt{}
	}
	r.m[query] = st
	return st, nil
}

// close closes every statement (before the database).
func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.m {
		_ = st.Close() // closing the database follows
	}
	r.m = nil
}

// rtx is a read transaction whose queries use the store's prepared read
// statements (a querier).
type rtx struct {
	s  *Store
	tx *sql.Tx
}

// stmt is query bound to the transaction; the transaction's end releases
// it, the statement it came from stays prepared.
func (q rtx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := q.s.rstmts.get(ctx, q.s.rdb, query)
	if err != nil {
		return nil, err
	}
	return q.tx.StmtContext(ctx, st), nil
}

func (q rtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := q.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (q rtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := q.stmt(ctx, query)
	if err != nil {
		return q.tx.QueryRowContext(ctx, query, args...) // reports the same error through Scan
	}
	return st.QueryRowContext(ctx, args...)
}

func (q rtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := q.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}
