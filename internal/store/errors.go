package store

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
)

// SQLite primary result codes that mean the file is not a readable database.
const (
	sqliteCorrupt = 11 // SQLITE_CORRUPT
	sqliteNotADB  = 26 // SQLITE_NOTADB
)

// wrap adds the store file and the operation to err, once. SQLite's
// corruption codes become ErrCorrupt with what to do about it.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNewerFormat) {
		return err // built by corruptf, which names the file already
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteNotADB:
			return corruptf(s.path, op+": "+se.Error()+": the file is not an SQLite database, so not a memdoctor store (check the file name)")
		case sqliteCorrupt:
			return corruptf(s.path, op+": "+se.Error()+"; "+recoverHint(s.path))
		}
	}
	return fmt.Errorf("store %s: %s: %w", s.path, op, err)
}
