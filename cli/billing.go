package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
	"runr.dev/console/ops/billing"
	"runr.dev/console/store/billingdb"
)

// envWebhookSecret is where `runr billing set --webhook-secret-env` reads the secret by default.
const envWebhookSecret = "RUNR_WEBHOOK_SECRET"

// billingCmd holds `runr billing …` (Billing module, RUNR_BILLING=on): the charges, closed
// bills and events a billing system reads, the console's billing settings and, with
// tenants, the offers of platform regions.
func billingCmd() *cobra.Command {
	b := &cobra.Command{Use: "billing", Short: "Charges, bills, events, billing settings and offers, through the console's API (Billing module)"}
	addOutputFlag(b)
	b.AddCommand(billingListCmd[billing.ChargeView]("charges", "List charges (this month's are open)", "/api/billing/charges", chargesTable),
		billingListCmd[billing.BillView]("bills", "List the closed bills", "/api/billing/bills", billsTable),
		billingListCmd[billingdb.Event]("events", "List the billing events and how their delivery went", "/api/billing/events", eventsTable),
		billingSettingsCmd(), billingSetCmd(), billingTestEventCmd(), billingOffersCmd(), billingAnswerCmd("accept"), billingAnswerCmd("decline"))
	return b
}

// billingGet reads a billing route, saying so when the module is off.
func billingGet(cmd *cobra.Command, c *apiclient.Client, path string, out any) error {
	err := c.Do(cmd.Context(), http.MethodGet, path, nil, out)
	if apiclient.IsNotFound(err) {
		return fmt.Errorf("this console does not bill: its Billing module is off (RUNR_BILLING=on): %w", err)
	}
	return err
}

// billingListCmd is a list of the billing API with its filters.
func billingListCmd[T any](use, short, path string, table func(w io.Writer, rows []T)) *cobra.Command {
	var period, tenant, region, status string
	var page int
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		c, err := apiClient(cmd)
		if err != nil {
			return err
		}
		q := url.Values{}
		for k, v := range map[string]string{"period": period, "tenant": tenant, "region": region, "status": status} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if page > 0 {
			q.Set("page", strconv.Itoa(page))
		}
		var out struct {
			Data []T `json:"data"`
		}
		if err := billingGet(cmd, c, path+"?"+q.Encode(), &out); err != nil {
			return err
		}
		return printed(cmd, out.Data, func(w io.Writer) error { table(w, out.Data); return nil })
	}}
	cmd.Flags().StringVar(&period, "period", "", "a month, such as 2026-11")
	cmd.Flags().StringVar(&tenant, "tenant", "", "a tenant's id, or platform")
	cmd.Flags().StringVar(&region, "region", "", "a region's id")
	cmd.Flags().IntVar(&page, "page", 0, "the page (50 rows each)")
	if use == "events" {
		cmd.Flags().StringVar(&status, "status", "", "kept, pending, delivered or dead")
	}
	return cmd
}

func chargesTable(w io.Writer, cs []billing.ChargeView) {
	fmt.Fprintln(w, "PERIOD\tREGION\tPROJECT\tTYPE\tAMOUNT\tCURRENCY\tBILLED")
	for _, c := range cs {
		project := c.ProjectName
		if c.ProjectID == "" {
			project = "(allocation)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%t\n", c.PeriodStart.Format("2006-01"), c.RegionName, project, c.Type, c.Amount, c.Currency, c.BillID != nil)
	}
}

func billsTable(w io.Writer, bs []billing.BillView) {
	fmt.Fprintln(w, "PERIOD\tACCOUNT\tLINES\tTOTAL\tCURRENCY\tID")
	for _, b := range bs {
		account := "platform"
		if b.TenantID != nil {
			account = *b.TenantID
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", b.PeriodStart.Format("2006-01"), account, len(b.Lines.V), b.Total, b.Currency, b.ID)
	}
}

func eventsTable(w io.Writer, es []billingdb.Event) {
	fmt.Fprintln(w, "TYPE\tSTATUS\tATTEMPTS\tCREATED\tID\tLAST ERROR")
	for _, e := range es {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", e.Type, e.Status, e.Attempts, e.CreatedAt.Format("2006-01-02 15:04"), e.ID, e.LastError)
	}
}

// settingsTable prints the billing settings.
func settingsTable(v billing.SettingsView) func(w io.Writer) error {
	return func(w io.Writer) error {
		fmt.Fprintf(w, "currency\t%s\nwebhook_url\t%s\nwebhook_secret_set\t%t\nwebhook_from_chart\t%t\n", v.Currency, v.WebhookURL, v.WebhookSecretSet, v.WebhookFromChart)
		return nil
	}
}

// billingSettingsCmd is `runr billing settings`.
func billingSettingsCmd() *cobra.Command {
	return &cobra.Command{Use: "settings", Short: "Show the currency and the webhook (never its secret)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			var out struct{ Data billing.SettingsView }
			if err := billingGet(cmd, c, "/api/billing/settings", &out); err != nil {
				return err
			}
			return printed(cmd, out.Data, settingsTable(out.Data))
		}}
}

// billingSetCmd is `runr billing set [--currency C] [--webhook-url URL] [--webhook-secret-env NAME]`.
func billingSetCmd() *cobra.Command {
	var secretEnv string
	cmd := &cobra.Command{Use: "set", Short: "Change the currency or the webhook; the secret is read from an environment variable", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			body := map[string]any{}
			if cmd.Flags().Changed("currency") {
				body["currency"], _ = cmd.Flags().GetString("currency")
			}
			if cmd.Flags().Changed("webhook-url") {
				body["webhook_url"], _ = cmd.Flags().GetString("webhook-url")
			}
			if cmd.Flags().Changed("webhook-secret-env") {
				secret, ok := os.LookupEnv(secretEnv)
				if !ok {
					return fmt.Errorf("%s is not set: export the webhook secret there", secretEnv)
				}
				body["webhook_secret"] = secret
			}
			if len(body) == 0 {
				return fmt.Errorf("nothing to change: give --currency, --webhook-url or --webhook-secret-env")
			}
			var out struct{ Data billing.SettingsView }
			if err := c.Do(cmd.Context(), http.MethodPut, "/api/billing/settings", body, &out); err != nil {
				return err
			}
			return printed(cmd, out.Data, settingsTable(out.Data))
		}}
	cmd.Flags().String("currency", "", "the console's currency (ISO 4217, fixed once a charge exists)")
	cmd.Flags().String("webhook-url", "", "where the signed events go (empty: kept for GET /api/billing/events only)")
	cmd.Flags().StringVar(&secretEnv, "webhook-secret-env", envWebhookSecret, "the environment variable that holds the webhook secret (at least 16 characters)")
	return cmd
}

// billingTestEventCmd is `runr billing test-event`.
func billingTestEventCmd() *cobra.Command {
	return &cobra.Command{Use: "test-event", Short: "Send a signed test event to the webhook now and say how it went", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			var out struct{ Data billingdb.Event }
			if err := c.Do(cmd.Context(), http.MethodPost, "/api/billing/test-event", nil, &out); err != nil {
				return err
			}
			if out.Data.Status != billingdb.EventDelivered {
				return fmt.Errorf("test event %s was not delivered: %s (it is retried like any other)", out.Data.ID, out.Data.LastError)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "test event %s delivered\n", out.Data.ID)
			return nil
		}}
}

// billingOffersCmd is `runr billing offers`: the offers of platform regions (Tenancy module).
func billingOffersCmd() *cobra.Command {
	return &cobra.Command{Use: "offers", Short: "List the offers of platform regions to tenants (a tenant's user: its own)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			var out struct{ Data []billingdb.Offer }
			if err := billingGet(cmd, c, "/api/billing/offers", &out); err != nil {
				return err
			}
			return printed(cmd, out.Data, func(w io.Writer) error {
				fmt.Fprintln(w, "REGION\tTENANT\tSTATUS\tID")
				for _, o := range out.Data {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", o.RegionName, o.TenantName, o.Status, o.ID)
				}
				return nil
			})
		}}
}

// billingAnswerCmd is `runr billing accept OFFER --markup PERCENT` or `runr billing decline OFFER`.
func billingAnswerCmd(answer string) *cobra.Command {
	var markup string
	cmd := &cobra.Command{Use: answer + " OFFER", Short: map[string]string{"accept": "Accept an offer with a markup: the region is assigned to your tenant",
		"decline": "Decline an offer: nothing is assigned"}[answer], Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			var out struct{ Data billingdb.Offer }
			body := map[string]string{"markup_percent": markup}
			if err := c.Do(cmd.Context(), http.MethodPost, "/api/billing/offers/"+apiclient.PathEscape(args[0])+"/"+answer, body, &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "offer of %s %s\n", out.Data.RegionName, out.Data.Status)
			return nil
		}}
	if answer == "accept" {
		cmd.Flags().StringVar(&markup, "markup", "0", "your markup on the platform's prices, in percent (e.g. 15)")
	}
	return cmd
}

// regionBillingCmd holds `runr regions billing show|set REGION`: a region's Billing tab.
func regionBillingCmd() *cobra.Command {
	b := &cobra.Command{Use: "billing", Short: "A region's billing type, prices and allocation (Billing module)"}
	show := regionCommand("show REGION", "Show a region's billing type, prices, allocation and this month's charges", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			var out struct{ Data billing.RegionView }
			if err := billingGet(cmd, c, "/api/knative-regions/"+url.PathEscape(r.ID)+"/billing", &out); err != nil {
				return err
			}
			return printed(cmd, out.Data, regionBillingTable(out.Data))
		})
	// Each flag is a key of PUT /api/knative-regions/{id}/billing; a flag left out keeps its value.
	flags := []struct{ flag, key, help string }{
		{"type", "type", "payg (pay as you go) or fixed (fixed resources)"},
		{"vcpu-hour", "vcpu_hour", "the price of a vCPU-hour, such as 0.035"},
		{"memory-gib-hour", "memory_gib_hour", "the price of a GiB-hour of memory"},
		{"gpu-hour", "gpu_hour", "the price of a GPU-hour"},
		{"fixed-price", "fixed_price", "a fixed region's price per month"},
		{"cpu-m", "allocation_cpu_m", "a fixed region's CPU, in millicores"},
		{"memory-mi", "allocation_memory_mi", "a fixed region's memory, in MiB"},
		{"gpus", "allocation_gpus", "a fixed region's GPUs"},
	}
	var set *cobra.Command
	set = regionCommand("set REGION [--type payg|fixed] [--vcpu-hour P] [--memory-gib-hour P] [--gpu-hour P] [--fixed-price P] [--cpu-m N] [--memory-mi N] [--gpus N]",
		"Change a region's billing type, prices (decimals of the currency) or allocation", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			body := map[string]any{}
			for _, f := range flags {
				if !set.Flags().Changed(f.flag) {
					continue
				}
				v, _ := set.Flags().GetString(f.flag)
				body[f.key] = v
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && strings.HasPrefix(f.key, "allocation_") {
					body[f.key] = n
				}
			}
			if len(body) == 0 {
				return fmt.Errorf("nothing to change: give the type, a price or the allocation")
			}
			var out struct{ Data billing.RegionView }
			if err := c.Do(cmd.Context(), http.MethodPut, "/api/knative-regions/"+url.PathEscape(r.ID)+"/billing", body, &out); err != nil {
				return err
			}
			return printed(cmd, out.Data, regionBillingTable(out.Data))
		})
	for _, f := range flags {
		set.Flags().String(f.flag, "", f.help)
	}
	b.AddCommand(show, set)
	return b
}

// regionBillingTable prints a region's billing.
func regionBillingTable(v billing.RegionView) func(w io.Writer) error {
	return func(w io.Writer) error {
		fmt.Fprintf(w, "type\t%s\nvcpu_hour\t%s\nmemory_gib_hour\t%s\ngpu_hour\t%s\nfixed_price\t%s\n", v.Type, v.Prices.VCPUHour, v.Prices.MemoryGiBHour, v.Prices.GPUHour, v.Prices.FixedPeriod)
		fmt.Fprintf(w, "allocation\t%dm CPU, %d MiB, %d GPU(s)\nheld\t%dm CPU, %d MiB, %d GPU(s)\nthis month\t%s %s\n",
			v.Allocation.CPUm, v.Allocation.MemoryMi, v.AllocGPUs, v.Held.CPUm, v.Held.MemoryMi, v.HeldGPUs, v.Total, v.Currency)
		return nil
	}
}
