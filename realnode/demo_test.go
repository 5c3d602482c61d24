package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/ops/projects"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// TestDemoProjectsOnTheRealNode installs the demo projects through the console's API on a
// region whose data path runs for real, with the managed Redis, Debian's Python as the
// demo image and Mailpit built from its module as the SMTP catcher: the frontend (through
// Traefik) shows what the backend answers at its cluster-local address, a form sent to the
// frontend queues an e-mail on the region's Redis stream, the mailer (a queue worker) sends
// it to Mailpit, a run of the statistics job counts it and the backend shows the figures;
// removing the demo takes away what it created.
func TestDemoProjectsOnTheRealNode(t *testing.T) {
	d := newDataPath(t)
	ctx := context.Background()
	c, e, r := d.c, d.e, d.r
	python, err := testcluster.PythonImage()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PushHostImage(ctx, python, e.Cfg.DemoImage); err != nil {
		t.Fatal(err)
	}
	if err := c.PushHostImage(ctx, testcluster.RedisImage, e.Cfg.RedisImage); err != nil {
		t.Fatal(err)
	}
	if err := c.PushMailpit(ctx, e.Cfg.DemoSMTPImage, os.Stderr); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, e, action(t, e, d.tok, r.ID, "redis", map[string]any{"mode": "managed"}))

	j := action(t, e, d.tok, r.ID, "demo-projects", nil)
	if j.Status != store.JobSucceeded {
		t.Fatalf("demo install: %s %s\n%s\n%s\n%s", j.Status, j.Error, jobLog(t, e, j.ID), d.knativeReport(r.Name), c.PodReport(r.Name, ""))
	}
	demos, err := e.Store.DemoProjects(ctx, r.ID)
	if err != nil || len(demos) != 4 {
		t.Fatalf("the demo projects: %v %+v", err, demos)
	}
	slug := map[string]string{}
	for _, p := range demos {
		slug[p.Name] = p.Slug
	}
	host := func(name string) string { return slug[name] + "." + r.Name + ".example.test" }
	stream := projects.DemoStream(r)

	// The frontend, through Traefik, shows the backend's answer: it reached the backend at
	// its cluster-local address.
	var resp *http.Response
	var body []byte
	eventually(t, 2*time.Minute, func() string {
		return fmt.Sprintf("%s\n%s", body, podLog(t, c, r.Name, "runr.dev/project"))
	}, func() bool {
		resp, body = d.call(t, host("Demo frontend"), "/")
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), "&quot;stream&quot;: &quot;"+stream+"&quot;")
	})

	// The form queues an e-mail through the backend on the region's Redis stream.
	to := "someone@example.test"
	form := url.Values{"to": {to}}.Encode()
	pr, err := d.client(30*time.Second).Post("http://"+host("Demo frontend")+"/", "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	posted, _ := io.ReadAll(pr.Body)
	pr.Body.Close()
	if pr.StatusCode != http.StatusOK || !strings.Contains(string(posted), "&quot;queued&quot;") {
		t.Fatalf("the frontend's form: %d %s", pr.StatusCode, posted)
	}

	// The mailer consumed it and Mailpit has it.
	smtp := c.WaitRealPod(t, r.Name, "app.kubernetes.io/name="+projects.DemoSMTPName, time.Minute)
	var inbox struct {
		Messages []struct {
			Subject string
			To      []struct{ Address string }
		}
	}
	eventually(t, 2*time.Minute, func() string {
		return fmt.Sprintf("Mailpit has %+v\n%s", inbox, podLog(t, c, r.Name, "runr.dev/project"))
	}, func() bool {
		res, err := c.InClusterHTTP().Get("http://" + smtp.Status.PodIP + ":8025/api/v1/messages")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		inbox.Messages = nil
		return json.NewDecoder(res.Body).Decode(&inbox) == nil && len(inbox.Messages) == 1 &&
			len(inbox.Messages[0].To) == 1 && inbox.Messages[0].To[0].Address == to && inbox.Messages[0].Subject == "Hello from a RunR region"
	})

	// A run of the statistics job (what the CronJob starts every five minutes) counts the
	// e-mail, none pending, and the backend shows the figures.
	cj, err := c.Client.BatchV1().CronJobs(r.Name).Get(ctx, slug["Demo stats"], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: cj.Name + "-now", Namespace: r.Name, Labels: cj.Spec.JobTemplate.Labels},
		Spec: cj.Spec.JobTemplate.Spec}
	if _, err := c.Client.BatchV1().Jobs(r.Name).Create(ctx, run, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, func() string { return c.PodReport(r.Name, "job-name="+run.Name) }, func() bool {
		got, err := c.Client.BatchV1().Jobs(r.Name).Get(ctx, run.Name, metav1.GetOptions{})
		return err == nil && got.Status.Succeeded == 1
	})
	var figures struct {
		Stream  string
		Entries int
		Stats   *struct{ Entries, Pending int }
	}
	resp, body = d.call(t, host("Demo backend"), "/")
	if err := json.Unmarshal(body, &figures); err != nil || figures.Stream != stream || figures.Entries != 1 ||
		figures.Stats == nil || figures.Stats.Entries != 1 || figures.Stats.Pending != 0 {
		t.Fatalf("the backend's figures after the statistics ran: %v %d %s", err, resp.StatusCode, body)
	}

	// Removing the demo takes its projects and the SMTP catcher away.
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/demo-projects", d.tok, nil, &ans); st != 202 {
		t.Fatalf("remove the demo: %d", st)
	}
	mustSucceed(t, e, e.WaitJob(ans.JobID, 3*time.Minute))
	if left, err := e.Store.DemoProjects(ctx, r.ID); err != nil || len(left) != 0 {
		t.Fatalf("demo projects left: %v %+v", err, left)
	}
	if _, err := c.Client.AppsV1().Deployments(r.Name).Get(ctx, projects.DemoSMTPName, metav1.GetOptions{}); err == nil {
		t.Fatal("the SMTP catcher is still there")
	}
}
