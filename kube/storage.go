package kube

import storagev1 "k8s.io/api/storage/v1"

// IsDefaultStorageClass says whether a StorageClass is the cluster's default: the one a
// claim without a class gets (the annotation, or its beta form older clusters set).
func IsDefaultStorageClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" ||
		sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true"
}
