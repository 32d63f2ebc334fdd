// The TDSet reconcile as a kubebuilder project would write it with controller-runtime: a cached client,
// CreateOrUpdate for the owned Deployment, a status update only when the status changed, and a requeue at the next
// window boundary. Keelson's benchmark runs it beside Keelson's own TDSet operator on the same apiserver.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

type TDSetReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
}

func (r *TDSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var tds TDSet
	if err := r.Get(ctx, req.NamespacedName, &tds); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	zone := tds.Spec.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	location, err := time.LoadLocation(zone)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	replicas, window := desiredAt(tds.Spec, now.In(location))
	next := nextTransition(tds.Spec, location, now)

	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: tds.Name, Namespace: tds.Namespace}}
	operation, err := controllerutil.CreateOrUpdate(ctx, r.Client, deployment, func() error {
		mutateDeployment(deployment, &tds, replicas)
		return controllerutil.SetControllerReference(&tds, deployment, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if operation == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(&tds, corev1.EventTypeNormal, "Created", "Created Deployment %s with %d replicas", tds.Name, replicas)
	}

	status := tds.DeepCopy().Status
	status.DesiredReplicas = replicas
	status.ActiveWindow = window
	status.ObservedGeneration = tds.Generation
	if next != nil {
		status.NextTransitionTime = &metav1.Time{Time: *next}
	}
	available := deployment.Status.AvailableReplicas
	message := fmt.Sprintf("%d of %d replicas available", available, replicas)
	if available >= replicas && deployment.Status.ObservedGeneration >= deployment.Generation {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
			Reason: "Available", Message: message, ObservedGeneration: tds.Generation})
	} else {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse,
			Reason: "Unavailable", Message: message, ObservedGeneration: tds.Generation})
	}
	if !equality.Semantic.DeepEqual(status, tds.Status) {
		tds.Status = status
		if err := r.Status().Update(ctx, &tds); err != nil {
			return ctrl.Result{}, err
		}
	}
	if next == nil {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: next.Sub(now) + 50*time.Millisecond}, nil
}

// mutateDeployment sets only the fields the TDSet decides, so that fields the apiserver defaults never look changed.
func mutateDeployment(deployment *appsv1.Deployment, tds *TDSet, replicas int32) {
	labels := map[string]string{"app.kubernetes.io/name": tds.Name, "app.kubernetes.io/instance": tds.Name,
		"app.kubernetes.io/managed-by": "keelson-bench"}
	deployment.Labels = labels
	deployment.Spec.Replicas = &replicas
	if deployment.CreationTimestamp.IsZero() {
		deployment.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{
			"app.kubernetes.io/name": tds.Name, "app.kubernetes.io/instance": tds.Name}}
	}
	deployment.Spec.Template.Labels = labels
	if len(deployment.Spec.Template.Spec.Containers) == 0 {
		deployment.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
	}
	container := &deployment.Spec.Template.Spec.Containers[0]
	container.Image = tds.Spec.Container.Image
	if len(container.Ports) != 1 || container.Ports[0].ContainerPort != tds.Spec.Container.Port {
		container.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: tds.Spec.Container.Port, Protocol: corev1.ProtocolTCP}}
	}
}

func (r *TDSetReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&TDSet{}).
		Owns(&appsv1.Deployment{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

func main() {
	var workers int
	var cachePods bool
	var controllers string
	flag.IntVar(&workers, "max-concurrent-reconciles", 2, "reconciles run at once (Keelson's TDSet and PodAlert run 2)")
	flag.StringVar(&controllers, "controllers", "tdset", "tdset or podalert")
	flag.BoolVar(&cachePods, "cache-pods", false, "also cache every Pod, as a pod-watching operator (PodAlert) would")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := addKnownTypes(scheme); err != nil {
		panic(err)
	}
	// controller-runtime leaves client-side rate limiting off (QPS -1) and relies on the apiserver's fairness, as
	// Keelson does.
	// A careful author today drops managedFields from every cached object, as Keelson drops all but its own applies,
	// and keeps of each Pod only what the operator reads, as Keelson's pod-watching operators declare.
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", LeaderElection: false,
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: keepPodView}}}})
	if err != nil {
		log.Error(err, "unable to create manager")
		os.Exit(1)
	}
	var setup error
	switch controllers {
	case "tdset":
		setup = (&TDSetReconciler{Client: mgr.GetClient(), Scheme: scheme,
			Recorder: mgr.GetEventRecorderFor("tdset-controller")}).SetupWithManager(mgr, workers)
	case "podalert":
		setup = (&PodAlertReconciler{Client: mgr.GetClient(),
			Recorder: mgr.GetEventRecorderFor("podalert-controller")}).SetupWithManager(mgr, workers)
	default:
		setup = fmt.Errorf("--controllers: %q is neither tdset nor podalert", controllers)
	}
	if setup != nil {
		log.Error(setup, "unable to create controller")
		os.Exit(1)
	}
	if cachePods {
		// Asked for before the manager starts, the informer is one of the caches the controllers wait for, as Keelson's
		// are and as a controller that watches Pods would have it.
		if _, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{}); err != nil {
			panic(err)
		}
	}
	log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "problem running manager")
		os.Exit(1)
	}
}
