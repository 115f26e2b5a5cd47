package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// postgres is a throwaway PostgreSQL cluster on loopback in a temporary
// directory, with fsync and synchronous commit on (the defaults, set
// explicitly); arms (e1a) and (e2a) turn synchronous commit off on their
// own database.
type postgres struct {
	bin, dir string
	port     int
	pid      int
	version  string
	cred     *syscall.Credential
}

// pgBin finds PostgreSQL's server programs, installing Debian's package
// if they are missing.
func pgBin() (string, error) {
	find := func() string {
		if p, err := exec.LookPath("initdb"); err == nil {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Dir(r)
			}
			return filepath.Dir(p)
		}
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		slices.Sort(dirs)
		for _, d := range slices.Backward(dirs) {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d
			}
		}
		return ""
	}
	if d := find(); d != "" {
		return d, nil
	}
	fmt.Fprintln(os.Stderr, "bench: PostgreSQL is missing; apt-get install -y postgresql")
	for _, args := range [][]string{{"update"}, {"install", "-y", "postgresql"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
		}
	}
	if d := find(); d != "" {
		return d, nil
	}
	return "", fmt.Errorf("no initdb after installing postgresql")
}

func startPostgres() (*postgres, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-pg-")
	if err != nil {
		return nil, err
	}
	p := &postgres{bin: bin, dir: dir}
	// PostgreSQL refuses to run as root: run it as the postgres user
	// (Debian's package creates it), or nobody.
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			if u, err = user.Lookup("nobody"); err != nil {
				return nil, err
			}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	data := filepath.Join(dir, "data")
	if _, err := p.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	o := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=on -c synchronous_commit=on -c max_connections=200", p.port, dir)
	if _, err := p.run("pg_ctl", "-D", data, "-o", o, "-l", filepath.Join(dir, "log"), "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		p.stop()
		return nil, err
	}
	p.pid, _ = strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	p.version = strings.TrimSpace(p.sql("select version()"))
	if i := strings.Index(p.version, " on "); i > 0 {
		p.version = p.version[:i]
	}
	return p, nil
}

func (p *postgres) run(prog string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(p.bin, prog), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = p.dir
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w\n%s", prog, err, out.String())
	}
	return out.String(), nil
}

func (p *postgres) sql(q string) string {
	out, _ := p.run("psql", "-h", "127.0.0.1", "-p", fmt.Sprint(p.port), "-U", "postgres", "-d", "postgres", "-Atc", q)
	return out
}

func (p *postgres) setting(name string) string { return strings.TrimSpace(p.sql("show " + name)) }

func (p *postgres) createDB(name string) error {
	_, err := p.run("psql", "-h", "127.0.0.1", "-p", fmt.Sprint(p.port), "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qAtc", "create database "+name)
	return err
}

func (p *postgres) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

func (p *postgres) stop() {
	_, _ = p.run("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop")
	os.RemoveAll(p.dir)
}
