package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// NATSFlags are how a serve process proves who it is to NATS and how it
// secures the connection.
type NATSFlags struct {
	NKey  string // nkey user seed file (steward nats-users writes one per plane)
	Creds string // NATS creds file (JWT and seed), for an operator-mode NATS
	CA    string // CAs to trust for the server's certificate
	Cert  string // client certificate, with Key
	Key   string
}

// register adds the flags to fs; nkey says whose seed --nats-nkey is.
func (f *NATSFlags) register(fs *flag.FlagSet, nkey string) {
	fs.StringVar(&f.NKey, "nats-nkey", "", nkey)
	fs.StringVar(&f.Creds, "nats-creds", "", "NATS credentials `FILE` (user JWT and seed), instead of --nats-nkey")
	fs.StringVar(&f.CA, "nats-ca", "", "PEM `FILE` of the CAs that sign the NATS server's certificate; turns TLS on (so does a tls:// URL, against the system's CAs)")
	fs.StringVar(&f.Cert, "nats-cert", "", "PEM `FILE` of a client certificate for NATS TLS, with --nats-key")
	fs.StringVar(&f.Key, "nats-key", "", "PEM `FILE` of the private key of --nats-cert")
}

// check reports flags that cannot go together; files are read by options.
func (f NATSFlags) check() error {
	if f.NKey != "" && f.Creds != "" {
		return errors.New("--nats-nkey and --nats-creds are alternatives: give one")
	}
	if (f.Cert == "") != (f.Key == "") {
		return errors.New("--nats-cert and --nats-key go together: give both, or neither")
	}
	return nil
}

// authenticated reports whether the connection names a NATS user.
func (f NATSFlags) authenticated() bool { return f.NKey != "" || f.Creds != "" }

// options turns the flags into connection options, reading every file
// now, so that a bad one is named by its flag before any dial. inbox is
// the plane's reply prefix: per-plane permissions let a plane receive
// replies only there.
func (f NATSFlags) options(inbox string) ([]nats.Option, error) {
	opts := []nats.Option{nats.CustomInboxPrefix(inbox)}
	switch {
	case f.NKey != "":
		o, err := nats.NkeyOptionFromSeed(f.NKey)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey: %s: %w (want an nkey user seed, SU…, as steward nats-users writes)", f.NKey, err)
		}
		opts = append(opts, o)
	case f.Creds != "":
		if err := checkCreds(f.Creds); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(f.Creds))
	}
	if f.CA == "" && f.Cert == "" {
		return opts, nil // a tls:// URL still gets TLS, against the system's CAs
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("--nats-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--nats-ca: %s holds no PEM certificate", f.CA)
		}
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("--nats-cert/--nats-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return append(opts, nats.Secure(cfg)), nil
}

// checkCreds reads a creds file as nats.UserCredentials will at every
// connect, to fail at start, naming the file, rather than on each dial.
func checkCreds(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	defer clear(b)
	if _, err := nkeys.ParseDecoratedJWT(b); err != nil {
		return fmt.Errorf("%s: no user JWT: %w", path, err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(b)
	if err != nil {
		return fmt.Errorf("%s: no user seed: %w", path, err)
	}
	kp.Wipe()
	return nil
}

// natsRefused logs what the server refused plane: with the table right,
// nothing, so anything is a bug worth seeing. Other asynchronous errors
// of the connection are logged as they come.
func (m *Server) natsRefused(plane string) nats.ErrHandler {
	return func(_ *nats.Conn, _ *nats.Subscription, err error) {
		switch {
		case errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), "$JS.API.CONSUMER.DELETE."):
			// An ordered consumer deletes the consumer it replaces after
			// a reset; no plane may delete consumers, and the server
			// removes the idle one itself.
			m.logger.Debug("NATS refused a consumer delete, as it refuses every plane's", "plane", plane, "err", err)
			return
		case errors.Is(err, nats.ErrPermissionViolation):
			m.logger.Error("NATS refused the plane's user", "plane", plane, "err", err)
			return
		}
		m.logger.Warn("NATS connection error", "plane", plane, "err", err)
	}
}
