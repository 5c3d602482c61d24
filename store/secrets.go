package store

import (
	"context"
	"fmt"

	"runr.dev/console/crypt"
)

// secretColumn names one column that holds secrets.
type secretColumn struct{ table, key, column string }

// secretColumns lists every column that holds a secret at rest.
var secretColumns = []secretColumn{
	{"regions", "id", "kubeconfig"},
	{"regions", "id", "old_kubeconfig"},
	{"regions", "id", "registry_secret"},
	{"regions", "id", "redis_password"},
	{"regions", "id", "function_tls_key"},
	{"regions", "id", "agent_token"},
	{"regions", "id", "object_secret_key"},
	{"jobs", "id", "secret_params"},
}

// RegisterSecretColumn adds a column to the list (for tables added by later migrations and sub-packages).
func RegisterSecretColumn(table, key, column string) {
	secretColumns = append(secretColumns, secretColumn{table, key, column})
}

// EncryptPlaintext encrypts every secret value still stored in plain text and returns how many.
func (s *Store) EncryptPlaintext(ctx context.Context) (int, error) {
	total := 0
	for _, sc := range secretColumns {
		q := fmt.Sprintf(`SELECT %s AS k, %s AS v FROM %s WHERE %s <> '' AND %s NOT LIKE 'enc:v1:%%' AND %s NOT LIKE 'enc:v2:%%'`, sc.key, sc.column, sc.table, sc.column, sc.column, sc.column)
		var rows []struct{ K, V string }
		if err := s.db(ctx).SelectContext(ctx, &rows, q); err != nil {
			return total, wrap("encrypt plaintext "+sc.table+"."+sc.column, err)
		}
		for _, r := range rows {
			u := fmt.Sprintf(`UPDATE %s SET %s = $1 WHERE %s = $2 AND %s = $3`, sc.table, sc.column, sc.key, sc.column)
			res, err := s.db(ctx).ExecContext(ctx, u, s.Cipher.Encrypt(r.V), r.K, r.V)
			if err != nil {
				return total, wrap("encrypt plaintext "+sc.table+"."+sc.column, err)
			}
			n, _ := res.RowsAffected()
			total += int(n)
		}
	}
	n, err := s.sealPlainEnvVars(ctx)
	return total + n, err
}

// sealPlainEnvVars moves the plain env vars an earlier version left in projects.env_vars
// into env_vars_sealed, encrypted, and returns how many projects it sealed. A row changed
// meanwhile is left for the next run.
func (s *Store) sealPlainEnvVars(ctx context.Context) (int, error) {
	var rows []struct{ ID, Env string }
	if err := s.db(ctx).SelectContext(ctx, &rows, `SELECT id, env_vars::text AS env FROM projects WHERE env_vars <> '{}'::jsonb`); err != nil {
		return 0, wrap("encrypt plaintext projects.env_vars", err)
	}
	total := 0
	for _, r := range rows {
		res, err := s.db(ctx).ExecContext(ctx, `UPDATE projects SET env_vars_sealed = $1, env_vars = '{}' WHERE id = $2 AND env_vars = $3::jsonb`,
			s.Cipher.Encrypt(r.Env), r.ID, r.Env)
		if err != nil {
			return total, wrap("encrypt plaintext projects.env_vars", err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	return total, nil
}

// RotationReport is what RotateKey did, and which keys the stored secrets still use.
type RotationReport struct {
	// Reencrypted counts the values written anew under the current key.
	Reencrypted int
	// InUse counts the sealed values by key id after the rotation ("v1": without id).
	InUse map[string]int
	// Undecryptable lists the values no configured key opens ("table.column of id");
	// they are left as they are.
	Undecryptable []string
}

// RotateKey re-encrypts every secret value that is not under the current key (plaintext
// included) with the current key, reading with the previous ones, in one transaction;
// the running consoles keep reading both meanwhile. It reports the keys still in use.
func (s *Store) RotateKey(ctx context.Context) (*RotationReport, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, wrap("rotate key", err)
	}
	defer tx.Rollback()
	rep := &RotationReport{InUse: map[string]int{}}
	cur := s.Cipher.KeyID()
	for _, sc := range secretColumns {
		q := fmt.Sprintf(`SELECT %s AS k, %s AS v FROM %s WHERE %s <> '' FOR UPDATE`, sc.key, sc.column, sc.table, sc.column)
		var rows []struct{ K, V string }
		if err := tx.SelectContext(ctx, &rows, q); err != nil {
			return nil, wrap("rotate key "+sc.table+"."+sc.column, err)
		}
		for _, r := range rows {
			if crypt.KeyIDOf(r.V) == cur {
				rep.InUse[cur]++
				continue
			}
			plain, err := s.Cipher.Decrypt(r.V)
			if err != nil {
				rep.Undecryptable = append(rep.Undecryptable, fmt.Sprintf("%s.%s of %s (key %s)", sc.table, sc.column, r.K, crypt.KeyIDOf(r.V)))
				rep.InUse[crypt.KeyIDOf(r.V)]++
				continue
			}
			u := fmt.Sprintf(`UPDATE %s SET %s = $1 WHERE %s = $2`, sc.table, sc.column, sc.key)
			if _, err := tx.ExecContext(ctx, u, s.Cipher.Encrypt(plain), r.K); err != nil {
				return nil, wrap("rotate key "+sc.table+"."+sc.column, err)
			}
			rep.Reencrypted++
			rep.InUse[cur]++
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, wrap("rotate key", err)
	}
	return rep, nil
}
