package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"

	"runr.dev/console/apiclient"
	"runr.dev/console/config"
)

// Output formats of the API client commands (-o).
const (
	outTable = "table"
	outJSON  = "json"
	outYAML  = "yaml"
)

// addOutputFlag gives a command group -o table|json|yaml, with its completion.
func addOutputFlag(cmd *cobra.Command) {
	cmd.PersistentFlags().StringP("output", "o", outTable, "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outTable, outJSON, outYAML}, cobra.ShellCompDirectiveNoFileComp))
}

// outputFormat reads -o and refuses a format it does not know.
func outputFormat(cmd *cobra.Command) (string, error) {
	f, err := cmd.Flags().GetString("output")
	if err != nil {
		return outTable, nil
	}
	switch f {
	case outTable, outJSON, outYAML:
		return f, nil
	}
	return "", fmt.Errorf("unknown output format %q: use table, json or yaml", f)
}

// apiClient is the client of the console the user logged in to (or RUNR_URL/RUNR_TOKEN).
func apiClient(cmd *cobra.Command) (*apiclient.Client, error) {
	l, err := apiclient.LoadLogin()
	if err != nil {
		return nil, err
	}
	if l.URL == "" {
		return nil, errors.New("no console to talk to: run `runr login --url URL`, or set RUNR_URL and RUNR_TOKEN")
	}
	if l.Token == "" {
		return nil, fmt.Errorf("no token for %s: run `runr login --url %s`, or set RUNR_TOKEN", l.URL, l.URL)
	}
	c := apiclient.New(l.URL, l.Token)
	c.UserAgent = "runr-cli/" + config.Version
	return c, nil
}

// printed writes v (a value or raw JSON) as JSON or YAML, or calls table for -o table.
func printed(cmd *cobra.Command, v any, table func(w io.Writer) error) error {
	format, err := outputFormat(cmd)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	raw, ok := v.(json.RawMessage)
	if !ok && format != outTable {
		if raw, err = json.Marshal(v); err != nil {
			return fmt.Errorf("encode the output: %w", err)
		}
	}
	switch format {
	case outJSON:
		var buf strings.Builder
		if err := indentJSON(&buf, raw); err != nil {
			return err
		}
		_, err := fmt.Fprintln(out, buf.String())
		return err
	case outYAML:
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return fmt.Errorf("encode the output as YAML: %w", err)
		}
		_, err = out.Write(y)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if err := table(tw); err != nil {
		return err
	}
	return tw.Flush()
}

// indentJSON writes raw JSON indented.
func indentJSON(w io.Writer, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode the output: %w", err)
	}
	return nil
}

// rawList joins raw JSON objects into a JSON array.
func rawList[T any](items []T, raw func(T) json.RawMessage) json.RawMessage {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = string(raw(it))
	}
	return json.RawMessage("[" + strings.Join(parts, ",") + "]")
}

// isTerminal reports whether w is a terminal (progress is drawn in place only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// readSecret reads a secret from a file (- is stdin) or an environment variable, never
// from a flag's value: flags show in the process list and the shell's history.
func readSecret(cmd *cobra.Command, file, env string) (string, error) {
	if file == "" {
		return os.Getenv(env), nil
	}
	var raw []byte
	var err error
	if file == "-" {
		raw, err = io.ReadAll(cmd.InOrStdin())
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	return strings.TrimRight(string(raw), "\r\n"), nil
}

// readFileFlag reads the file a required flag names.
func readFileFlag(flag, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("--%s is required", flag)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the --%s file: %w", flag, err)
	}
	return string(raw), nil
}

// dash shows an empty value as "-" in a table.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
