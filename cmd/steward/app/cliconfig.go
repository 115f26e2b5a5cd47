package app

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/steward-run/steward/sdk/go/steward"
)

// The environment variables the people's commands read when a flag is
// not given (TokenEnv is the older commands' too).
const (
	AddrEnv   = "STEWARD_ADDR"
	CAEnv     = "STEWARD_CA"
	ConfigEnv = "STEWARD_CONFIG"
)

// cliConfig is the file `steward login` writes: one Steward, its token
// and the CA its certificate is signed by.
type cliConfig struct {
	Addr  string `json:"addr"`
	Token string `json:"token,omitempty"`
	CA    string `json:"ca,omitempty"` // a PEM file's absolute path
}

// configPath is $STEWARD_CONFIG, else steward/config.json in the user's
// config directory.
func configPath() (string, error) {
	if p := os.Getenv(ConfigEnv); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config file: %w; set $%s", err, ConfigEnv)
	}
	return filepath.Join(dir, "steward", "config.json"), nil
}

// readConfig reads the config file; a missing one is empty.
func readConfig() (cliConfig, string, error) {
	var cfg cliConfig
	path, err := configPath()
	if err != nil {
		return cfg, "", nil // no config directory: nothing configured
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, path, nil
	}
	if err != nil {
		return cfg, path, err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, path, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, path, nil
}

// writeConfig writes cfg readable by its owner alone: it holds a token.
func writeConfig(path string, cfg cliConfig) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// connection is where the command's calls go and what they carry
// (resolveConnection).
func (c *cli) connection() (base, token, ca string, err error) {
	return resolveConnection(c.addr, c.token, c.ca)
}

// resolveConnection takes each of the address, token and CA from its
// flag, else the environment, else the config file. The config file's
// token and CA go only to the config file's address: a token saved for one
// Steward is never sent to another named by a flag or the environment.
func resolveConnection(addrFlag, tokenFlag, caFlag string) (base, token, ca string, err error) {
	cfg, _, err := readConfig()
	if err != nil {
		return "", "", "", err
	}
	addr := firstOf(addrFlag, os.Getenv(AddrEnv), cfg.Addr, DefaultAddr)
	base = strings.TrimSuffix(serverURL(addr), "/")
	token, ca = firstOf(tokenFlag, os.Getenv(TokenEnv)), firstOf(caFlag, os.Getenv(CAEnv))
	if cfg.Addr != "" && base == strings.TrimSuffix(serverURL(cfg.Addr), "/") {
		token, ca = firstOf(token, cfg.Token), firstOf(ca, cfg.CA)
	}
	return base, token, ca, nil
}

// client is the SDK's client of the command's Steward, retrying as r
// says. Without a token, the older commands' rule holds: a dev server on
// this machine that proves it owns the default data directory gets its
// admin token (httpClient).
func (c *cli) client(r steward.Retry) (*steward.Client, error) {
	base, hc, err := c.dialHTTP()
	if err != nil {
		return nil, err
	}
	return steward.New(base, steward.WithHTTPClient(hc), steward.WithRetry(r)), nil
}

// dialHTTP is where the command's Steward is, and an HTTP client that
// presents its token: for the generated clients of services the SDK does
// not wrap as well.
func (c *cli) dialHTTP() (string, *http.Client, error) {
	base, token, ca, err := c.connection()
	if err != nil {
		return "", nil, err
	}
	roots, err := readCA(ca)
	if err != nil {
		return "", nil, err
	}
	return base, httpClient(token, roots), nil
}

// readCA reads a PEM file of CA certificates; none for "".
func readCA(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
