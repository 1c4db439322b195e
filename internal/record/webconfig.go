package record

// The recorder's web configuration file: TLS and basic auth for /metrics
// and the live page, in the format of the Prometheus exporter-toolkit (the
// file node_exporter takes with --web.config.file), so one file serves
// both. What it holds guards root-only data, so the reading is strict: an
// unknown field, a hash that is not bcrypt, a certificate that does not
// load or a client CA file with no certificate in it is an error, never a
// default.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// maxWebConfigSize bounds the file: a few users and paths fit in a
// kilobyte; inline PEM certificates in a few more.
const maxWebConfigSize = 1 << 20

// webConfig is the file, as read and checked by parseWebConfig.
type webConfig struct {
	TLS   webTLS            `yaml:"tls_server_config"`
	HTTP  webHTTP           `yaml:"http_server_config"`
	Rate  webRate           `yaml:"rate_limit"`
	Users map[string]string `yaml:"basic_auth_users"` // name → bcrypt hash
}

// webTLS is tls_server_config. The certificate and key are given as
// files (relative to the configuration file's directory) or inline as
// PEM; so are the CAs that sign client certificates.
type webTLS struct {
	CertFile         string   `yaml:"cert_file"`
	KeyFile          string   `yaml:"key_file"`
	Cert             string   `yaml:"cert"`
	Key              string   `yaml:"key"`
	ClientAuthType   string   `yaml:"client_auth_type"`
	ClientCAFile     string   `yaml:"client_ca_file"`
	ClientCA         string   `yaml:"client_ca"`
	ClientAllowedSAN []string `yaml:"client_allowed_sans"`
	MinVersion       string   `yaml:"min_version"`
	MaxVersion       string   `yaml:"max_version"`
	CipherSuites     []string `yaml:"cipher_suites"`
	CurvePreferences []string `yaml:"curve_preferences"`
	// PreferServerCipherSuites is accepted for the format's sake; Go's TLS
	// chooses the cipher suite itself and ignores it.
	PreferServerCipherSuites *bool `yaml:"prefer_server_cipher_suites"`

	// Resolved by check.
	clientAuth tls.ClientAuthType
	minVersion uint16
	maxVersion uint16
	ciphers    []uint16
	curves     []tls.CurveID
}

// webHTTP is http_server_config: HTTP/2 over TLS (on unless false) and
// the security headers the toolkit allows to be set on every answer.
type webHTTP struct {
	HTTP2   *bool             `yaml:"http2"`
	Headers map[string]string `yaml:"headers"`
}

// webRate is rate_limit: at most Burst requests at once, then one per
// Interval, for all clients together (429 past it).
type webRate struct {
	Burst    int           `yaml:"burst"`
	Interval time.Duration `yaml:"interval"`
}

// webFields lists the fields of each part of the file, to name an unknown
// one (a misspelt key must not silently leave a server open).
var webFields = map[string][]string{
	"":                   {"tls_server_config", "http_server_config", "rate_limit", "basic_auth_users"},
	"tls_server_config":  {"cert_file", "key_file", "cert", "key", "client_auth_type", "client_ca_file", "client_ca", "client_allowed_sans", "min_version", "max_version", "cipher_suites", "curve_preferences", "prefer_server_cipher_suites"},
	"http_server_config": {"http2", "headers"},
	"rate_limit":         {"burst", "interval"},
}

// webHeaders are the headers http_server_config may set, with the values
// each may take (nil: any).
var webHeaders = map[string][]string{
	"Strict-Transport-Security": nil,
	"X-Content-Type-Options":    {"nosniff"},
	"X-Frame-Options":           {"deny", "sameorigin"},
	"X-XSS-Protection":          nil,
	"Content-Security-Policy":   nil,
}

var tlsVersions = map[string]uint16{
	"TLS10": tls.VersionTLS10, "TLS11": tls.VersionTLS11, "TLS12": tls.VersionTLS12, "TLS13": tls.VersionTLS13,
}

var tlsCurves = map[string]tls.CurveID{
	"CurveP256": tls.CurveP256, "CurveP384": tls.CurveP384, "CurveP521": tls.CurveP521, "X25519": tls.X25519,
}

var clientAuthTypes = map[string]tls.ClientAuthType{
	"":                           tls.NoClientCert,
	"NoClientCert":               tls.NoClientCert,
	"RequestClientCert":          tls.RequestClientCert,
	"RequireAnyClientCert":       tls.RequireAnyClientCert,
	"RequireClientCert":          tls.RequireAnyClientCert, // the toolkit's older name
	"VerifyClientCertIfGiven":    tls.VerifyClientCertIfGiven,
	"RequireAndVerifyClientCert": tls.RequireAndVerifyClientCert,
}

// readWebConfig reads and checks the file at path; relative file names in
// it are taken from the file's directory. The certificate files are not
// read: loadTLS does, at start and for each TLS connection.
func readWebConfig(path string) (*webConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	data, err := io.ReadAll(io.LimitReader(f, maxWebConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWebConfigSize {
		return nil, fmt.Errorf("larger than %d bytes: not a web configuration file", maxWebConfigSize)
	}
	c, err := parseWebConfig(data)
	if err != nil {
		return nil, err
	}
	c.TLS.inDir(filepath.Dir(path))
	return c, nil
}

// parseWebConfig reads the file's text and checks everything that does
// not need other files.
func parseWebConfig(data []byte) (*webConfig, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("YAML: more than one document: give one")
	}
	c := &webConfig{}
	if doc.Kind == 0 { // empty: no TLS, no users
		return c, nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return c, nil
	}
	if err := checkFields(root, ""); err != nil {
		return nil, err
	}
	if err := root.Decode(c); err != nil {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkFields refuses a key the format does not have, naming it and its
// line, and a map where a section should be.
func checkFields(n *yaml.Node, section string) error {
	where := "at the top level"
	if section != "" {
		where = "in " + section
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty section
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("YAML: line %d: want a map of fields %s", n.Line, where)
	}
	known := webFields[section]
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("YAML: line %d: a field name must be a plain word %s", k.Line, where)
		}
		if !slices.Contains(known, k.Value) {
			return fmt.Errorf("YAML: line %d: unknown field %q %s (known: %s)", k.Line, k.Value, where, strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return fmt.Errorf("YAML: line %d: field %q given twice %s", k.Line, k.Value, where)
		}
		seen[k.Value] = true
		if _, sub := webFields[k.Value]; sub && section == "" {
			if err := checkFields(v, k.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// check validates the users, headers, rate limit and TLS settings.
func (c *webConfig) check() error {
	names := make([]string, 0, len(c.Users))
	for name := range c.Users {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		// The hash is not printed: it is a secret of sorts.
		if _, err := bcrypt.Cost([]byte(c.Users[name])); err != nil {
			return fmt.Errorf("basic_auth_users: user %q: the password is not a bcrypt hash (%w); make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n'", name, err)
		}
	}
	for k, v := range c.HTTP.Headers {
		allowed, ok := webHeaders[k]
		if !ok {
			known := make([]string, 0, len(webHeaders))
			for h := range webHeaders {
				known = append(known, h)
			}
			sort.Strings(known)
			return fmt.Errorf("http_server_config: header %q cannot be set (these can: %s)", k, strings.Join(known, ", "))
		}
		if allowed != nil && !slices.Contains(allowed, v) {
			return fmt.Errorf("http_server_config: header %s: %q is not one of %q", k, v, allowed)
		}
	}
	switch {
	case c.Rate.Interval < 0 || c.Rate.Burst < 0:
		return errors.New("rate_limit: burst and interval must not be negative")
	case c.Rate.Interval > 0 && c.Rate.Burst < 1:
		return errors.New("rate_limit: with an interval, burst must be 1 or more (0 would refuse every request)")
	}
	return c.TLS.check()
}

// enabled tells whether the file asks for TLS at all.
func (t *webTLS) enabled() bool {
	return t.CertFile != "" || t.Cert != "" || t.KeyFile != "" || t.Key != "" ||
		t.ClientCAFile != "" || t.ClientCA != "" || t.ClientAuthType != ""
}

func (t *webTLS) check() error {
	t.minVersion, t.maxVersion = tls.VersionTLS12, tls.VersionTLS13
	for _, v := range []struct {
		name string
		in   string
		out  *uint16
	}{{"min_version", t.MinVersion, &t.minVersion}, {"max_version", t.MaxVersion, &t.maxVersion}} {
		if v.in == "" {
			continue
		}
		n, ok := tlsVersions[v.in]
		if !ok {
			return fmt.Errorf("tls_server_config: %s %q: want one of TLS10, TLS11, TLS12, TLS13", v.name, v.in)
		}
		*v.out = n
	}
	if t.minVersion > t.maxVersion {
		return fmt.Errorf("tls_server_config: min_version %s is above max_version %s", t.MinVersion, t.MaxVersion)
	}
	t.ciphers = nil
	for _, name := range t.CipherSuites {
		i := slices.IndexFunc(tls.CipherSuites(), func(s *tls.CipherSuite) bool { return s.Name == name })
		if i < 0 {
			return fmt.Errorf("tls_server_config: cipher suite %q is not one Go offers as secure (see Go's tls.CipherSuites)", name)
		}
		t.ciphers = append(t.ciphers, tls.CipherSuites()[i].ID)
	}
	t.curves = nil
	for _, name := range t.CurvePreferences {
		id, ok := tlsCurves[name]
		if !ok {
			return fmt.Errorf("tls_server_config: curve %q: want one of CurveP256, CurveP384, CurveP521, X25519", name)
		}
		t.curves = append(t.curves, id)
	}
	ca, ok := clientAuthTypes[t.ClientAuthType]
	if !ok {
		return fmt.Errorf("tls_server_config: client_auth_type %q: want one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert", t.ClientAuthType)
	}
	t.clientAuth = ca
	if !t.enabled() {
		if len(t.ClientAllowedSAN) > 0 || len(t.CipherSuites) > 0 || len(t.CurvePreferences) > 0 || t.MinVersion != "" || t.MaxVersion != "" {
			return errors.New("tls_server_config: TLS settings without a certificate: add cert_file and key_file")
		}
		return nil
	}
	switch {
	case t.CertFile == "" && t.Cert == "":
		return errors.New("tls_server_config: no certificate: add cert_file (or cert)")
	case t.KeyFile == "" && t.Key == "":
		return errors.New("tls_server_config: no key: add key_file (or key)")
	case t.CertFile != "" && t.Cert != "", t.KeyFile != "" && t.Key != "", t.ClientCAFile != "" && t.ClientCA != "":
		return errors.New("tls_server_config: give cert_file or cert, key_file or key, client_ca_file or client_ca, not both")
	}
	hasCA := t.ClientCAFile != "" || t.ClientCA != ""
	switch {
	case hasCA && ca == tls.NoClientCert:
		return errors.New("tls_server_config: client CAs without client_auth_type: set it (RequireAndVerifyClientCert to accept only clients they sign)")
	case !hasCA && (ca == tls.VerifyClientCertIfGiven || ca == tls.RequireAndVerifyClientCert):
		return fmt.Errorf("tls_server_config: client_auth_type %s verifies client certificates but no client_ca_file says against what", t.ClientAuthType)
	}
	return nil
}

// inDir makes relative file names relative to dir.
func (t *webTLS) inDir(dir string) {
	for _, p := range []*string{&t.CertFile, &t.KeyFile, &t.ClientCAFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// loadTLS reads the certificate, its key and the client CAs and returns
// the TLS configuration they make, or an error naming the file at fault.
func (t *webTLS) loadTLS() (*tls.Config, error) {
	read := func(field, file, inline string) ([]byte, error) {
		if file == "" {
			return []byte(inline), nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("tls_server_config: %s: %w", field, err)
		}
		return b, nil
	}
	certPEM, err := read("cert_file", t.CertFile, t.Cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := read("key_file", t.KeyFile, t.Key)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The error names no key material, only what is wrong with it.
		return nil, fmt.Errorf("tls_server_config: the certificate (%s) and key (%s) do not load: %w", orInline(t.CertFile), orInline(t.KeyFile), err)
	}
	cfg := &tls.Config{
		Certificates:     []tls.Certificate{cert},
		MinVersion:       t.minVersion,
		MaxVersion:       t.maxVersion,
		CipherSuites:     t.ciphers,
		CurvePreferences: t.curves,
		ClientAuth:       t.clientAuth,
	}
	if t.ClientCAFile != "" || t.ClientCA != "" {
		caPEM, err := read("client_ca_file", t.ClientCAFile, t.ClientCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("tls_server_config: client CAs (%s) hold no PEM certificate", orInline(t.ClientCAFile))
		}
		cfg.ClientCAs = pool
	}
	if len(t.ClientAllowedSAN) > 0 {
		allowed := slices.Clone(t.ClientAllowedSAN)
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return checkClientSAN(raw, allowed)
		}
	}
	return cfg, nil
}

func orInline(file string) string {
	if file == "" {
		return "inline"
	}
	return file
}

// checkClientSAN accepts a client whose certificate names one of allowed
// (a DNS name, e-mail address, IP address or URI); a client without a
// certificate is refused.
func checkClientSAN(raw [][]byte, allowed []string) error {
	if len(raw) == 0 {
		return errors.New("client_allowed_sans is set and the client sent no certificate")
	}
	cert, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	sans := slices.Concat(cert.DNSNames, cert.EmailAddresses)
	for _, ip := range cert.IPAddresses {
		sans = append(sans, ip.String())
	}
	for _, u := range cert.URIs {
		sans = append(sans, u.String())
	}
	for _, s := range sans {
		if slices.Contains(allowed, s) {
			return nil
		}
	}
	return errors.New("the client certificate names none of client_allowed_sans")
}

// http2 tells whether HTTP/2 is offered over TLS (the default).
func (c *webConfig) http2() bool { return c.HTTP.HTTP2 == nil || *c.HTTP.HTTP2 }
