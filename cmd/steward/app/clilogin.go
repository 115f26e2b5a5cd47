package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

func (c *cli) loginCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "login --addr URL --token TOKEN [--ca FILE]",
		Short: "save where Steward is and your token, for the people's commands",
		Long: `login checks that Steward at URL takes the token, then saves both (and the CA) in
$` + ConfigEnv + `, else steward/config.json in your config directory, readable by you
alone. The people's commands then need no flags; a flag or the environment still wins,
and the saved token and CA go to the saved address only.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return c.login(cmd.Context()) },
	}
	cmd.Flags().StringVar(&c.addr, "addr", "", "`URL` (or HOST:PORT) of Steward; required")
	cmd.Flags().StringVar(&c.token, "token", "", "bearer `TOKEN` (default $"+TokenEnv+")")
	cmd.Flags().StringVar(&c.ca, "ca", "", "PEM `FILE` of the CAs that sign the server's TLS certificate")
	return cmd
}

func (c *cli) login(ctx context.Context) error {
	if c.addr == "" {
		return usagef("--addr is required")
	}
	cfg := cliConfig{Addr: strings.TrimSuffix(serverURL(c.addr), "/"), Token: firstOf(c.token, os.Getenv(TokenEnv))}
	if c.ca != "" {
		abs, err := filepath.Abs(c.ca)
		if err != nil {
			return err
		}
		cfg.CA = abs
	}
	roots, err := readCA(cfg.CA)
	if err != nil {
		return err
	}
	// One read the token must pass: a token Steward does not take is
	// not saved.
	s := steward.New(cfg.Addr, steward.WithHTTPClient(httpClient(cfg.Token, roots)))
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := s.ListTasks(ctx, &stewardv1.ListTasksRequest{PageSize: 1}); err != nil && steward.CodeOf(err) != connect.CodePermissionDenied {
		return fmt.Errorf("log in to %s: %w; nothing saved", cfg.Addr, err)
	}
	path, err := configPath()
	if err != nil {
		return err
	}
	if err := writeConfig(path, cfg); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	_, err = fmt.Fprintf(c.stdout, "saved %s and its token to %s\n", cfg.Addr, path)
	return err
}
