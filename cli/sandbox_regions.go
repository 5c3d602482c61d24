package cli

import (
	"net/url"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
)

// sandboxRegionsCmd is `runr sandbox regions show|set`: PUT /api/sandbox-regions/{id}.
func sandboxRegionsCmd() *cobra.Command {
	rs := &cobra.Command{Use: "regions", Short: "A region's Sandbox API settings (sandboxes.manage to change them)"}
	addOutputFlag(rs)
	show, set := settingsCommands("a region's Sandbox API settings", func(r *apiclient.Region) string { return "/api/sandbox-regions/" + url.PathEscape(r.ID) },
		func(set *cobra.Command) []string {
			f := set.Flags()
			f.Bool("enabled", true, "the region offers sandboxes")
			f.StringSlice("allowed-classes", nil, "the runtime classes sandboxes may ask for (comma-separated; default every installed class)")
			f.String("default-class", "", "the class of a sandbox that names none (default: the strongest allowed)")
			f.Bool("allow-runc", false, "allow sandboxes without isolation (runc)")
			f.Int("default-ttl-seconds", 900, "a sandbox's time to live when it names none")
			f.Int("max-ttl-seconds", 0, "the longest time to live a sandbox may ask for")
			f.Int("max-cpu-m", 0, "the most CPU a sandbox may ask for, in millicores (50-4000)")
			f.Int("max-memory-mb", 0, "the most memory a sandbox may ask for, in MB (64-8192)")
			f.Int("max-disk-mb", 0, "the most disk a sandbox may ask for, in MB (64-10240)")
			return []string{"enabled", "allowed-classes", "default-class", "allow-runc", "default-ttl-seconds", "max-ttl-seconds", "max-cpu-m", "max-memory-mb", "max-disk-mb"}
		}, nil)
	rs.AddCommand(show, set)
	return rs
}
