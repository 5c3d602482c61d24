package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/lib/pq"
	"runr.dev/console/crypt"
)

// Project is a function deployed into one region.
type Project struct {
	ID       string  `db:"id" json:"id"`
	Name     string  `db:"name" json:"name"`
	Slug     string  `db:"slug" json:"slug"`
	RegionID *string `db:"region_id" json:"region_id"`
	Image    string  `db:"image" json:"image"`
	// EnvVars are the plain env vars, decrypted from EnvVarsSealed (or read as an earlier
	// version left them in the env_vars column, until `runr secrets encrypt` seals them).
	EnvVars       JSON[map[string]string] `db:"env_vars" json:"env_vars"`
	EnvVarsSealed string                  `db:"env_vars_sealed" json:"-"`
	SecretEnvVars string                  `db:"secret_env_vars" json:"-"`
	CPUm          int                     `db:"cpu_m" json:"cpu_m"`
	MemoryMi      int                     `db:"memory_mi" json:"memory_mi"`
	AlwaysOn      bool                    `db:"always_on" json:"always_on"`
	GPU           JSON[ProjectGPU]        `db:"gpu" json:"gpu"`
	State         ProjectState            `db:"state" json:"state"`
	DeployedImage string                  `db:"deployed_image" json:"deployed_image"`
	DeployedAt    *time.Time              `db:"deployed_at" json:"deployed_at"`
	Message       string                  `db:"message" json:"message"`
	CreatedAt     time.Time               `db:"created_at" json:"created_at"`
	UpdatedAt     time.Time               `db:"updated_at" json:"updated_at"`
	// TenantID is the tenant whose project it is (nil: the platform's).
	TenantID *string `db:"tenant_id" json:"-"`

	// DataLocation is the data location the project requires of its region ("" for none).
	DataLocation string `db:"data_location" json:"data_location"`

	// Kind is what the project runs as (an HTTP function unless set).
	Kind ProjectKind `db:"kind" json:"kind"`
	// Schedule is a scheduled job's cron schedule (five fields, as Kubernetes CronJobs).
	Schedule string `db:"schedule" json:"schedule"`
	// QueueStream is the Redis stream of the region's Redis that a queue worker consumes
	// (or, for the other kinds, that the project publishes to); "" for none.
	QueueStream string `db:"queue_stream" json:"queue_stream"`
	// Command replaces the image's entrypoint when set.
	Command JSON[[]string] `db:"command" json:"command"`
	// Demo marks a demo project of its region (General → Demo Projects).
	Demo bool `db:"demo" json:"demo"`

	// Secrets is the decrypted secret env vars (never serialised).
	Secrets map[string]string `db:"-" json:"-"`
	// SecretError says that the secret env vars could not be decrypted.
	SecretError string `db:"-" json:"secret_error,omitempty"`
}

// Region returns the project's region id ("" when it has none).
func (p *Project) Region() string { return deref(p.RegionID) }

var slugRe = regexp.MustCompile(`[^a-z0-9]+`)

// Slugify derives a DNS-safe slug from a name.
func Slugify(name string) string {
	s := strings.Trim(slugRe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "p-" + s
	}
	return strings.TrimRight(s, "-")
}

// decryptProject opens a project's sealed env vars and secret env vars. Plain values in
// env_vars win over sealed ones: only an earlier version writes them, and after the seal.
func (s *Store) decryptProject(p *Project) error {
	p.Secrets = map[string]string{}
	if len(p.EnvVars.V) == 0 && p.EnvVarsSealed != "" {
		if err := s.openSealed(p, p.EnvVarsSealed, &p.EnvVars.V); err != nil {
			return err
		}
	}
	if p.EnvVars.V == nil {
		p.EnvVars.V = map[string]string{}
	}
	if p.SecretEnvVars == "" {
		return nil
	}
	return s.openSealed(p, p.SecretEnvVars, &p.Secrets)
}

// openSealed decrypts a sealed map of a project into m; a value no key opens marks the
// project (SecretError) instead of failing: the others and the lists go on.
func (s *Store) openSealed(p *Project, sealed string, m *map[string]string) error {
	plain, err := s.Cipher.Decrypt(sealed)
	if err != nil {
		p.SecretError = SecretErrorText
		return nil
	}
	if err := json.Unmarshal([]byte(plain), m); err != nil {
		return fmt.Errorf("store: project %s: sealed values: %w", p.ID, err)
	}
	return nil
}

func (s *Store) sealSecrets(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return s.Cipher.Encrypt(string(raw)), nil
}

// CreateProject inserts a project with a unique slug derived from its name.
func (s *Store) CreateProject(ctx context.Context, p *Project) error {
	p.ID = NewID()
	if p.EnvVars.V == nil {
		p.EnvVars.V = map[string]string{}
	}
	orDefault(&p.Kind, ProjectHTTP)
	if p.Command.V == nil {
		p.Command.V = []string{}
	}
	sealed, err := s.sealSecrets(p.Secrets)
	if err != nil {
		return wrap("create project", err)
	}
	sealedEnv, err := s.sealSecrets(p.EnvVars.V)
	if err != nil {
		return wrap("create project", err)
	}
	base := Slugify(p.Name)
	if strings.HasPrefix(base, "runr-") {
		// runr-* names the console's own objects in the project namespace (runr-redis, …).
		base = "p-" + base
	}
	for i := 1; i < 100; i++ {
		p.Slug = base
		if i > 1 {
			p.Slug = fmt.Sprintf("%s-%d", base, i)
		}
		// A fresh row each try: sqlx allocates the pointer fields of its destination
		// before it knows there is no row, which turned a nil region into '' on the retry.
		var row Project
		err = s.db(ctx).GetContext(ctx, &row, `INSERT INTO projects (id, name, slug, region_id, image, env_vars, env_vars_sealed, secret_env_vars, cpu_m, memory_mi, always_on, gpu,
			kind, schedule, queue_stream, command, demo)
			VALUES ($1,$2,$3,$4,$5,'{}',$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16) ON CONFLICT (slug) DO NOTHING RETURNING *`,
			p.ID, p.Name, p.Slug, p.RegionID, p.Image, sealedEnv, sealed, p.CPUm, p.MemoryMi, p.AlwaysOn, p.GPU,
			p.Kind, p.Schedule, p.QueueStream, p.Command, p.Demo)
		if err == nil {
			*p = row
			return s.decryptProject(p)
		}
		if !isNotFound(wrap("", err)) {
			return wrap("create project", err)
		}
	}
	return fmt.Errorf("store: create project: no free slug for %q", p.Name)
}

// ProjectByID returns a project with its secrets decrypted.
func (s *Store) ProjectByID(ctx context.Context, id string) (*Project, error) {
	p := &Project{}
	if err := s.db(ctx).GetContext(ctx, p, `SELECT * FROM projects WHERE id = $1`, id); err != nil {
		return nil, wrap("project "+id, err)
	}
	return p, s.decryptProject(p)
}

// ListProjects returns projects, of one region when regionID is set.
func (s *Store) ListProjects(ctx context.Context, regionID string) ([]Project, error) {
	return s.selectProjects(ctx, "list projects", `SELECT * FROM projects WHERE $1 = '' OR region_id = $1 ORDER BY name`, regionID)
}

// selectProjects runs a query of projects and decrypts their secrets.
func (s *Store) selectProjects(ctx context.Context, op, query string, args ...any) ([]Project, error) {
	var ps []Project
	if err := s.db(ctx).SelectContext(ctx, &ps, query, args...); err != nil {
		return nil, wrap(op, err)
	}
	for i := range ps {
		if err := s.decryptProject(&ps[i]); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// UpdateProject saves a project's editable fields and secrets.
func (s *Store) UpdateProject(ctx context.Context, p *Project) error {
	if p.SecretError != "" {
		// Saving would replace the secrets it could not read with nothing.
		return fmt.Errorf("store: update project %s: %w", p.Slug, crypt.ErrUndecryptable)
	}
	sealed, err := s.sealSecrets(p.Secrets)
	if err != nil {
		return wrap("update project", err)
	}
	sealedEnv, err := s.sealSecrets(p.EnvVars.V)
	if err != nil {
		return wrap("update project", err)
	}
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE projects SET name = $2, region_id = $3, image = $4, env_vars = '{}', env_vars_sealed = $5, secret_env_vars = $6,
		cpu_m = $7, memory_mi = $8, always_on = $9, gpu = $10, schedule = $11, queue_stream = $12, command = $13, updated_at = now() WHERE id = $1`,
		p.ID, p.Name, p.RegionID, p.Image, sealedEnv, sealed, p.CPUm, p.MemoryMi, p.AlwaysOn, p.GPU, p.Schedule, p.QueueStream, p.Command)
	return affected("update project "+p.ID, res, err)
}

// SetProjectState records a project's state after a deploy, stop or refusal.
func (s *Store) SetProjectState(ctx context.Context, id string, state ProjectState, message, deployedImage string) error {
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE projects SET state = $2, message = $3,
		deployed_image = CASE WHEN $4 = '' THEN deployed_image ELSE $4 END,
		deployed_at = CASE WHEN $4 = '' THEN deployed_at ELSE now() END, updated_at = now() WHERE id = $1`, id, state, message, deployedImage)
	return affected("set project state "+id, res, err)
}

// DemoProjects returns the demo projects of a region.
func (s *Store) DemoProjects(ctx context.Context, regionID string) ([]Project, error) {
	return s.selectProjects(ctx, "demo projects of "+regionID, `SELECT * FROM projects WHERE region_id = $1 AND demo ORDER BY name`, regionID)
}

// DeleteProject removes a project's record.
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	res, err := s.db(ctx).ExecContext(ctx, `DELETE FROM projects WHERE id = $1`, id)
	return affected("delete project "+id, res, err)
}

// MoveProjectImages moves the image references (image, deployed_image) of the regions'
// projects (and, with unplaced, of the projects without a region) that start with from to
// start with to, and returns the names of the projects it moved; with dryRun it returns
// those it would move and moves nothing.
func (s *Store) MoveProjectImages(ctx context.Context, regionIDs []string, unplaced bool, from, to string, dryRun bool) ([]string, error) {
	moved := func(col string) string {
		return col + ` = CASE WHEN starts_with(` + col + `, $2) THEN $4 || substr(` + col + `, length($2) + 1) ELSE ` + col + ` END`
	}
	where := ` WHERE (region_id = ANY($1) OR region_id IS NULL AND $3) AND (starts_with(image, $2) OR starts_with(deployed_image, $2))`
	q := `WITH m AS (UPDATE projects SET ` + moved("image") + `, ` + moved("deployed_image") + `, updated_at = now()` + where + ` RETURNING name)
		SELECT name FROM m ORDER BY name`
	args := []any{pq.StringArray(regionIDs), from, unplaced, to}
	if dryRun {
		q, args = `SELECT name FROM projects`+where+` ORDER BY name`, args[:3]
	}
	var names []string
	err := s.db(ctx).SelectContext(ctx, &names, q, args...)
	return names, wrap("move the project images under "+from, err)
}
