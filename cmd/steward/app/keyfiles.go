package app

import (
	"path/filepath"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/keyfile"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/services/governance"
)

// secretFile is a file of a secret this server reads, and what another
// user of the machine who may read it could do.
type secretFile struct{ path, what, could string }

// secretFiles are the files of secrets this server reads, as its flags
// (and, in dev, its data directory) name them; some may not exist.
func (m *Server) secretFiles() []secretFile {
	dev := m.Mode == "dev"
	inDev := func(flag, name string) string {
		if flag == "" && dev {
			return filepath.Join(m.DataDir, name)
		}
		return flag
	}
	files := []secretFile{
		{m.AuthFile, "token file", "act as anyone in it"},
		{inDev(m.SecretKey, SecretKeyFile), "secret parameters' key", "open every sealed secret parameter"},
		{m.TLSKey, "TLS private key (--tls-key)", "pose as this server"},
		{m.NATS.NKey, "NATS user seed (--nats-nkey)", "write this plane's events"},
		{m.NATS.Creds, "NATS credentials (--nats-creds)", "write this plane's events"},
		{m.NATS.Key, "NATS client key (--nats-key)", "pose as this plane to NATS"},
	}
	if dev && m.AuthFile == "" && !m.Insecure {
		files[0].path = filepath.Join(m.DataDir, TokensFileName)
	}
	if dev || m.Plane == governance.PlaneName {
		files = append(files, secretFile{inDev(m.CredentialKey, CredentialKeyFile), "credential key", "sign credentials and permits as governance"})
	}
	if dev {
		files = append(files, secretFile{filepath.Join(m.DataDir, IdentityKeyFile), "CLI identity key", "pass for this server to the CLI, and be sent the admin token"})
		dir := filepath.Join(m.DataDir, embedded.UsersDir)
		for _, user := range append(natsperm.Users(), embedded.AdminUser) {
			files = append(files, secretFile{embedded.SeedFile(dir, user), "NATS user seed of " + user, "connect to the embedded NATS as " + user})
		}
	}
	return files
}

// warnReadableSecrets warns, at every start, of each secret file that
// other users of this machine may read.
func (m *Server) warnReadableSecrets() {
	for _, f := range m.secretFiles() {
		if f.path == "" {
			continue
		}
		if mode, open := keyfile.OpenToOthers(f.path); open {
			m.logger.Warn(f.what+" "+f.path+" is readable by other users of this machine, who could "+f.could+"; chmod 600 it", "mode", mode.String())
		}
	}
}
