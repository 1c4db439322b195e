package live

import (
	"fmt"
	"strings"
	"time"

	"github.com/memdoctor/memdoctor/internal/runtimes"
	"github.com/memdoctor/memdoctor/internal/safeio"
)

// Runtimes select the language runtimes check and record read besides
// the JVMs they find by themselves: --scrape URLs, their credentials
// (from files) and the interval between check's two readings.
type Runtimes struct {
	URLs                          []string
	TokenFile, User, PasswordFile string
	Timeout, Interval             time.Duration
	// Discover reads the /metrics that detected runtimes serve on their
	// own loopback ports (--discover).
	Discover bool
	// Auth is what Validate read from the files.
	Auth runtimes.Auth
}

// Validate checks the URLs, the timeout and the interval, and reads the
// credentials.
func (f *Runtimes) Validate() error {
	for _, u := range f.URLs {
		if err := runtimes.ValidateURL(u); err != nil {
			return err
		}
	}
	if f.Timeout <= 0 {
		return fmt.Errorf("--scrape-timeout %v: want a positive duration", f.Timeout)
	}
	if err := f.readAuth(); err != nil {
		return err
	}
	if f.Interval < 0 || f.Interval > 5*time.Minute {
		return fmt.Errorf("--gc-interval %v: want 0 to 5m", f.Interval)
	}
	return nil
}

// readAuth reads the scrape credentials from their files.
func (f *Runtimes) readAuth() error {
	read := func(flag, file string) (string, error) {
		b, err := safeio.ReadFile(file, safeio.Config)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flag, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%s %s: the file is empty", flag, file)
		}
		return v, nil
	}
	switch {
	case f.TokenFile != "" && (f.User != "" || f.PasswordFile != ""):
		return fmt.Errorf("--scrape-token-file and --scrape-user/--scrape-password-file: give one kind of credentials")
	case f.PasswordFile != "" && f.User == "":
		return fmt.Errorf("--scrape-password-file needs --scrape-user")
	case f.User != "" && f.PasswordFile == "":
		return fmt.Errorf("--scrape-user needs --scrape-password-file (a password is never given on the command line)")
	}
	var err error
	if f.TokenFile != "" {
		f.Auth.BearerToken, err = read("--scrape-token-file", f.TokenFile)
	}
	if f.User != "" {
		f.Auth.Username = f.User
		f.Auth.Password, err = read("--scrape-password-file", f.PasswordFile)
	}
	if err == nil && len(f.URLs) == 0 && (f.TokenFile != "" || f.User != "") {
		err = fmt.Errorf("scrape credentials given without --scrape URL")
	}
	return err
}
