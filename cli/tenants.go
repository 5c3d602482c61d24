package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
	"runr.dev/console/store"
)

// envTenantUserPassword is where `runr tenants add-user` reads a password by default.
const envTenantUserPassword = "RUNR_USER_PASSWORD"

// tenantsCmd holds `runr tenants …` (Tenancy module, RUNR_TENANCY=on): the tenants, their
// users, and the platform regions assigned to them with quotas (the Tenants page).
func tenantsCmd() *cobra.Command {
	t := &cobra.Command{Use: "tenants", Short: "Tenants, their users and their regions' quotas, through the console's API (Tenancy module)"}
	addOutputFlag(t)
	t.AddCommand(tenantsListCmd(), tenantShowCmd(), tenantCreateCmd(), tenantRenameCmd(), tenantRmCmd(), tenantUsersCmd(), tenantAddUserCmd(),
		tenantAssignCmd(), tenantQuotaCmd(), tenantUnassignCmd())
	return t
}

// tenantRun is the body of a command whose first argument names a tenant.
type tenantRun func(cmd *cobra.Command, c *apiclient.Client, t *store.Tenant, args []string) error

// tenantCommand is a command on one tenant (TENANT first: its name or id).
func tenantCommand(use, short string, extraArgs int, run tenantRun) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1 + extraArgs), RunE: func(cmd *cobra.Command, args []string) error {
		c, err := apiClient(cmd)
		if err != nil {
			return err
		}
		t, err := findTenant(cmd, c, args[0])
		if err != nil {
			return err
		}
		return run(cmd, c, t, args[1:])
	}}
}

// listTenants is GET /api/tenants.
func listTenants(cmd *cobra.Command, c *apiclient.Client) ([]store.Tenant, error) {
	var out struct {
		Data []store.Tenant `json:"data"`
	}
	err := c.Do(cmd.Context(), http.MethodGet, "/api/tenants", nil, &out)
	if apiclient.IsNotFound(err) {
		return nil, fmt.Errorf("this console has no tenants: its Tenancy module is off (RUNR_TENANCY=on): %w", err)
	}
	return out.Data, err
}

// findTenant finds a tenant by id or name.
func findTenant(cmd *cobra.Command, c *apiclient.Client, ref string) (*store.Tenant, error) {
	ts, err := listTenants(cmd, c)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		if ts[i].ID == ref || ts[i].Name == ref {
			return &ts[i], nil
		}
	}
	return nil, fmt.Errorf("no tenant is named %q (runr tenants list shows them)", ref)
}

// tenantsListCmd is `runr tenants list`.
func tenantsListCmd() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List the tenants with their users, regions, assignments and projects", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			ts, err := listTenants(cmd, c)
			if err != nil {
				return err
			}
			return printed(cmd, ts, func(w io.Writer) error {
				fmt.Fprintln(w, "NAME\tUSERS\tREGIONS\tASSIGNED\tPROJECTS\tID")
				for _, t := range ts {
					fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\n", t.Name, t.Users, t.Regions, t.Assignments, t.Projects, t.ID)
				}
				return nil
			})
		}}
}

// tenantShowCmd is `runr tenants show TENANT`: the tenant and its assigned regions.
func tenantShowCmd() *cobra.Command {
	return tenantCommand("show TENANT", "Show a tenant and the platform regions assigned to it with their quotas", 0,
		func(cmd *cobra.Command, c *apiclient.Client, t *store.Tenant, _ []string) error {
			var out struct {
				Data        store.Tenant       `json:"data"`
				Assignments []store.Assignment `json:"assignments"`
			}
			if err := c.Do(cmd.Context(), http.MethodGet, "/api/tenants/"+apiclient.PathEscape(t.ID), nil, &out); err != nil {
				return err
			}
			return printed(cmd, out, func(w io.Writer) error {
				fmt.Fprintf(w, "name\t%s\nid\t%s\n\nREGION\tCPU\tMEMORY GiB\n", out.Data.Name, out.Data.ID)
				for _, a := range out.Assignments {
					fmt.Fprintf(w, "%s\t%s\t%s\n", a.RegionName, quota(a.CPU), quota(a.MemoryGiB))
				}
				return nil
			})
		})
}

// quota prints a quota (0: none).
func quota(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// tenantCreateCmd is `runr tenants create NAME`.
func tenantCreateCmd() *cobra.Command {
	return &cobra.Command{Use: "create NAME", Short: "Create a tenant", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		c, err := apiClient(cmd)
		if err != nil {
			return err
		}
		return tenantAnswer(cmd, c, http.MethodPost, "/api/tenants", map[string]string{"name": args[0]})
	}}
}

// tenantRenameCmd is `runr tenants rename TENANT NAME`.
func tenantRenameCmd() *cobra.Command {
	return tenantCommand("rename TENANT NAME", "Rename a tenant", 1, func(cmd *cobra.Command, c *apiclient.Client, t *store.Tenant, args []string) error {
		return tenantAnswer(cmd, c, http.MethodPut, "/api/tenants/"+apiclient.PathEscape(t.ID), map[string]string{"name": args[0]})
	})
}

// tenantAnswer sends a request answered with a tenant and prints it.
func tenantAnswer(cmd *cobra.Command, c *apiclient.Client, method, path string, in any) error {
	var out struct {
		Data store.Tenant `json:"data"`
	}
	if err := c.Do(cmd.Context(), method, path, in, &out); err != nil {
		return err
	}
	return printed(cmd, out.Data, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s\t%s\n", out.Data.Name, out.Data.ID)
		return err
	})
}

// tenantRmCmd is `runr tenants rm TENANT` (refused while the tenant has regions or projects).
func tenantRmCmd() *cobra.Command {
	return tenantCommand("rm TENANT", "Delete a tenant with its users (refused while it has regions or projects)", 0,
		func(cmd *cobra.Command, c *apiclient.Client, t *store.Tenant, _ []string) error {
			if err := c.Do(cmd.Context(), http.MethodDelete, "/api/tenants/"+apiclient.PathEscape(t.ID), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Deleted tenant %s\n", t.Name)
			return nil
		})
}

// tenantUsersCmd is `runr tenants users TENANT`.
func tenantUsersCmd() *cobra.Command {
	return tenantCommand("users TENANT", "List a tenant's users", 0, func(cmd *cobra.Command, c *apiclient.Client, t *store.Tenant, _ []string) error {
		var out struct {
			Data json.RawMessage `json:"data"`
		}
		if err := c.Do(cmd.Context(), http.MethodGet, "/api/tenants/"+apiclient.PathEscape(t.ID)+"/users", nil, &out); err != nil {
			return err
		}
		var users []struct {
			Email string `json:"email"`
			Role  string `json:"role"`
		}
		if err := json.Unmarshal(out.Data, &users); err != nil {
			return fmt.Errorf("decode the users: %w", err)
		}
		return printed(cmd, out.Data, func(w io.Writer) error {
			fmt.Fprintln(w, "E-MAIL\tROLE")
			for _, u := range users {
				fmt.Fprintf(w, "%s\t%s\n", u.Email, u.Role)
			}
			return nil
		})
	})
}

// tenantAddUserCmd is `runr tenants add-user TENANT --email E --role R`: it prints a
// generated password once when none is given.
func tenantAddUserCmd() *cobra.Command {
	var email, role, passwordFile string
	cmd := tenantCommand("add-user TENANT --email EMAIL [--role ROLE]", "Create a user of a tenant (prints a generated password when none is given)", 0,
		func(cmd *cobra.Command, c *apiclient.Client, t *store.Tenant, _ []string) error {
			password, err := readSecret(cmd, passwordFile, envTenantUserPassword)
			if err != nil {
				return err
			}
			var out struct {
				Password string `json:"password"`
			}
			in := map[string]string{"email": email, "role": role, "password": password}
			if err := c.Do(cmd.Context(), http.MethodPost, "/api/tenants/"+apiclient.PathEscape(t.ID)+"/users", in, &out); err != nil {
				return err
			}
			if out.Password != "" {
				fmt.Fprintln(cmd.OutOrStdout(), out.Password)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "Created %s (%s) in %s\n", email, role, t.Name)
			}
			return nil
		})
	cmd.Flags().StringVar(&email, "email", "", "e-mail address (required)")
	cmd.Flags().StringVar(&role, "role", "member", "owner, admin, member or viewer")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "file holding the password (- for stdin; default: $"+envTenantUserPassword+", else generated)")
	return cmd
}

// quotaFlags are --cpu and --memory-gib; only the flags given are sent.
func quotaFlags(cmd *cobra.Command) {
	cmd.Flags().Float64("cpu", 0, "the tenant's CPUs on the region (0: no quota)")
	cmd.Flags().Float64("memory-gib", 0, "the tenant's GiB of memory on the region (0: no quota)")
}

// quotaBody is the request body of the quota flags that were given.
func quotaBody(cmd *cobra.Command, tenantID string) map[string]any {
	body := map[string]any{}
	if tenantID != "" {
		body["tenant_id"] = tenantID
	}
	for flag, key := range map[string]string{"cpu": "cpu", "memory-gib": "memory_gib"} {
		if cmd.Flags().Changed(flag) {
			v, _ := cmd.Flags().GetFloat64(flag)
			body[key] = v
		}
	}
	return body
}

// assignmentRun resolves TENANT and REGION, then sends one assignment request.
func assignmentRun(method string, withID bool, done string) tenantRun {
	return func(cmd *cobra.Command, c *apiclient.Client, t *store.Tenant, args []string) error {
		r, err := c.Region(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		path := apiclient.RegionPath(r.ID, "assignments")
		var body map[string]any
		switch {
		case method == http.MethodPost:
			body = quotaBody(cmd, t.ID)
		case method == http.MethodPut:
			body = quotaBody(cmd, "")
		}
		if withID {
			path += "/" + apiclient.PathEscape(t.ID)
		}
		var out struct {
			Data *store.Assignment `json:"data"`
		}
		if err := c.Do(cmd.Context(), method, path, body, &out); err != nil {
			return err
		}
		if out.Data == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s %s (%s)\n", done, r.Name, t.Name)
			return nil
		}
		return printed(cmd, out.Data, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s\t%s\tcpu %s\tmemory GiB %s\n", done, r.Name, quota(out.Data.CPU), quota(out.Data.MemoryGiB))
			return err
		})
	}
}

// tenantAssignCmd is `runr tenants assign TENANT REGION [--cpu N] [--memory-gib N]`.
func tenantAssignCmd() *cobra.Command {
	cmd := tenantCommand("assign TENANT REGION", "Assign a platform region to a tenant with quotas (refused with what is free when they do not fit)", 1,
		assignmentRun(http.MethodPost, false, "Assigned"))
	quotaFlags(cmd)
	return cmd
}

// tenantQuotaCmd is `runr tenants quota TENANT REGION [--cpu N] [--memory-gib N]`.
func tenantQuotaCmd() *cobra.Command {
	cmd := tenantCommand("quota TENANT REGION", "Change a tenant's quotas on an assigned region (a flag left out keeps its quota)", 1,
		assignmentRun(http.MethodPut, true, "Quota of"))
	quotaFlags(cmd)
	return cmd
}

// tenantUnassignCmd is `runr tenants unassign TENANT REGION`.
func tenantUnassignCmd() *cobra.Command {
	return tenantCommand("unassign TENANT REGION", "Take a platform region back from a tenant", 1,
		assignmentRun(http.MethodDelete, true, "Unassigned"))
}
