package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
)

// givenFlags is the JSON patch of a settings command: the API field (the flag's name with
// underscores) of each flag given on the command line, with its typed value. A file flag
// (--public-key-file) is read by its command.
func givenFlags(cmd *cobra.Command, names ...string) (map[string]any, error) {
	body := map[string]any{}
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		key := apiField(name)
		var err error
		switch f.Value.Type() {
		case "bool":
			body[key], err = cmd.Flags().GetBool(name)
		case "int":
			body[key], err = cmd.Flags().GetInt(name)
		case "stringSlice":
			body[key], err = cmd.Flags().GetStringSlice(name)
		default:
			body[key] = f.Value.String()
		}
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
	}
	return body, nil
}

// apiField is the API's name of a flag: --max-ttl-seconds is max_ttl_seconds.
func apiField(flag string) string {
	b := []byte(flag)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

// settingsCommand is `… show|set REGION` of a region's settings at path: show prints
// them, set sends the flags given (nothing else changes) and prints what the console kept;
// a job the change queued is reported, and followed with --wait.
func settingsCommands(what string, path func(r *apiclient.Region) string, flags func(set *cobra.Command) []string,
	extra func(cmd *cobra.Command, body map[string]any) error) (show, set *cobra.Command) {
	show = regionCommand("show REGION", "Show "+what, 0, func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
		var out json.RawMessage
		if err := c.Do(cmd.Context(), http.MethodGet, path(r), nil, &out); err != nil {
			return err
		}
		return printed(cmd, out, func(w io.Writer) error { return indented(w, out) })
	})
	var wait bool
	var names []string
	set = regionCommand("set REGION [flags]", "Change "+what+" (only the flags given)", 0, func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
		body, err := givenFlags(cmd, names...)
		if err != nil {
			return err
		}
		if extra != nil {
			if err := extra(cmd, body); err != nil {
				return err
			}
		}
		if len(body) == 0 {
			return errors.New("nothing to change: give at least one setting (see --help)")
		}
		var out json.RawMessage
		if err := c.Do(cmd.Context(), http.MethodPut, path(r), body, &out); err != nil {
			return err
		}
		var job struct {
			JobID string `json:"job_id"`
		}
		if json.Unmarshal(out, &job) == nil && job.JobID != "" {
			return queued(cmd, c, "Apply "+what+" ("+r.Name+")", job.JobID, wait)
		}
		return printed(cmd, out, func(w io.Writer) error { return indented(w, out) })
	})
	names = flags(set)
	addWaitFlag(set, &wait)
	return show, set
}

// indented writes a JSON answer as sorted key: value lines.
func indented(w io.Writer, raw json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		_, err = w.Write(append(raw, '\n'))
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := json.Marshal(m[k])
		fmt.Fprintf(w, "%s:\t%s\n", k, v)
	}
	return nil
}

// readFiles reads the files a flag names (PEM keys), "-" for standard input.
func readFiles(cmd *cobra.Command, names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		text, err := readSecret(cmd, n, "")
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("%s is empty", n)
		}
		out = append(out, text)
	}
	return out, nil
}
