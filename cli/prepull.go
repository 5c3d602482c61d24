package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// prepullCmd holds the two halves of the image pre-pull on the nodes: an init container
// of the agent image copies this static binary into a shared volume, and each image to
// pull runs it from there, so that no image needs a shell or `true` of its own (the
// Kaniko executor is distroless).
func prepullCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "prepull", Short: "Helpers of the image pre-pull on the nodes", Hidden: true}
	cmd.AddCommand(&cobra.Command{
		Use: "copy DEST", Short: "Copy this binary to DEST (executable)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if err := copyExecutable(self, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "copied %s to %s\n", self, args[0])
			return nil
		},
	}, &cobra.Command{
		Use: "done IMAGE", Short: "Say that IMAGE was pulled and exit", Args: cobra.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) { fmt.Fprintf(cmd.OutOrStdout(), "pulled %s\n", args[0]) },
	})
	return cmd
}

func copyExecutable(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("create %s: %w", dest, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy to %s: %w", dest, err)
	}
	return out.Close()
}
