package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Failure is the kind of a failed call to a cluster (or another server the console
// reads), classified from the error's types, never from its message text.
type Failure int

// The kinds of failure, from the network up.
const (
	FailureOther             Failure = iota // none of the kinds below
	FailureTimeout                          // no answer before the deadline
	FailureAddressRefused                   // the console's own dialer refused the address
	FailureConnectionRefused                // nothing listens on the address and port
	FailureNoSuchHost                       // the host name does not resolve
	FailureTLS                              // the server's certificate (or its TLS) was not accepted
	FailureUnauthorized                     // HTTP 401: the credentials were refused
	FailureForbidden                        // HTTP 403: the credentials may not do this
	FailureNotFound                         // HTTP 404
)

// Classify names the kind of a failed call from the types the error wraps: the console's
// dialer refusal, context deadlines and net.Error timeouts, syscall.ECONNREFUSED,
// net.DNSError, x509 and tls errors, and the API server's status.
func Classify(err error) Failure {
	var (
		ne       net.Error
		dns      *net.DNSError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
		header   tls.RecordHeaderError
		alert    tls.AlertError
	)
	switch {
	case err == nil:
		return FailureOther
	case IsAddressRefused(err):
		return FailureAddressRefused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return FailureTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailureConnectionRefused
	case errors.As(err, &dns) && dns.IsNotFound:
		return FailureNoSuchHost
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &hostname),
		errors.As(err, &verify), errors.As(err, &header), errors.As(err, &alert):
		return FailureTLS
	case apierrors.IsUnauthorized(err):
		return FailureUnauthorized
	case apierrors.IsForbidden(err):
		return FailureForbidden
	case apierrors.IsNotFound(err):
		return FailureNotFound
	}
	return FailureOther
}

// Short says a failure in a few words, without addresses or library messages.
func (f Failure) Short() string {
	switch f {
	case FailureTimeout:
		return "no answer in time"
	case FailureAddressRefused:
		return "its address is one the console never contacts"
	case FailureConnectionRefused:
		return "the connection was refused"
	case FailureNoSuchHost:
		return "its host name does not resolve"
	case FailureTLS:
		return "its TLS certificate was not accepted"
	case FailureUnauthorized:
		return "the credentials were refused"
	case FailureForbidden:
		return "access was refused"
	case FailureNotFound:
		return "not found"
	}
	return "it failed"
}

// ExplainConnect says why a cluster's API did not answer and what to check, by the kind
// of failure (Classify), with the evidence.
func ExplainConnect(server string, err error) string {
	msg := Evidence(err)
	switch Classify(err) {
	case FailureAddressRefused:
		return fmt.Sprintf("%s was not contacted: %s", server, msg)
	case FailureTimeout:
		return fmt.Sprintf("%s did not answer within 10 s: check the address and that the console can reach it (%s)", server, msg)
	case FailureConnectionRefused:
		return fmt.Sprintf("%s refused the connection: is the API server running on that address and port? (%s)", server, msg)
	case FailureNoSuchHost:
		return fmt.Sprintf("the host name of %s does not resolve: check the server address (%s)", server, msg)
	case FailureTLS:
		return fmt.Sprintf("the TLS certificate of %s was not accepted: check certificate-authority-data (%s)", server, msg)
	case FailureUnauthorized:
		return "the cluster refused the credentials (401): the token or client certificate is wrong or expired"
	case FailureForbidden:
		return "the cluster refused access (403): the kubeconfig's user may not read /version"
	}
	return fmt.Sprintf("%s could not be reached: %s", server, msg)
}
