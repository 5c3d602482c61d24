package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"runr.dev/console/apiclient"
)

// loginCmd is `runr login`: it checks a token against a console and keeps both in the
// user's config directory (mode 0600) for the API client commands.
func loginCmd() *cobra.Command {
	var consoleURL, token string
	cmd := &cobra.Command{
		Use:   "login --url URL [--token TOKEN]",
		Short: "Keep a console's URL and an API token for the runr commands (asks for the token when not given)",
		Long: "Checks the token against the console (GET /api/me) and keeps the URL and the token in runr/config.json\n" +
			"in the user's config directory, readable by the user alone. RUNR_URL and RUNR_TOKEN override them\n" +
			"(for automation, without a file). Create a token in the console (Tokens) or with `runr token create`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if consoleURL == "" {
				consoleURL = os.Getenv(apiclient.EnvURL)
			}
			if consoleURL == "" {
				return errors.New("--url is required (the console's address, e.g. https://runr.example.com)")
			}
			if token == "" {
				t, err := promptToken(cmd)
				if err != nil {
					return err
				}
				token = t
			}
			c := apiclient.New(consoleURL, token)
			me, err := c.Me(cmd.Context())
			if err != nil {
				return fmt.Errorf("log in to %s: %w", consoleURL, err)
			}
			path, err := apiclient.SaveLogin(apiclient.Login{URL: c.URL, Token: token})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Logged in to %s as %s (%s); the token is kept in %s\n", c.URL, me.Email, me.Role, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&consoleURL, "url", "", "the console's URL (or RUNR_URL)")
	cmd.Flags().StringVar(&token, "token", "", "the API token (asked for when not given, without echo on a terminal)")
	return cmd
}

// promptToken reads the token from the terminal without echo, or a line of stdin.
func promptToken(cmd *cobra.Command) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(cmd.ErrOrStderr(), "API token: ")
		raw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(cmd.ErrOrStderr())
		if err != nil {
			return "", fmt.Errorf("read the token: %w", err)
		}
		return strings.TrimSpace(string(raw)), nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return "", errors.New("no token: give --token, or type it when asked")
	}
	return strings.TrimSpace(line), nil
}

// logoutCmd is `runr logout`: it forgets the saved token.
func logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use: "logout", Short: "Forget the saved API token", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := apiclient.RemoveLogin()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "The token is removed from %s\n", path)
			return nil
		},
	}
}
