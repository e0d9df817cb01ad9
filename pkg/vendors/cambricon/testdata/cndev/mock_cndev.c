/*
Copyright The accel-dra Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

/*
 * A mock of Cambricon's libcndev.so for accel-dra's tests, written for
 * accel-dra against our own cndev.h. The tests build it with
 *   gcc -shared -fPIC -o libcndev.so mock_cndev.c
 * and load it through the agent's real purego loader. It reads the node it
 * pretends to be from the fixture file named by ACCEL_DRA_CNDEV_MOCK_FIXTURE
 * (one line per device and per MLU-Link port, see README.md), keeps sMLU
 * instances in ACCEL_DRA_CNDEV_MOCK_STATE when set (so they outlive the
 * process, like the driver's), and creates or removes the instances'
 * capability nodes under ACCEL_DRA_CNDEV_MOCK_ROOT when set (/dev/null
 * clones when run as root).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cndev.h"

#define MAX_DEV 32
#define MAX_PORT 8
#define NPROFILES 3

/* The driver's limits (jklincn/cambricon-mlu-driver@02061856):
 * MAX_SMLU_PROFILE_COUNT profiles per chip (include/cndrv_smlu.h line 10)
 * and MAX_SMLU_INSTANCE_COUNT instances (include/cndrv_core.h line 96),
 * checked as "more than", so one more gets through
 * (smlu/smlu_cgroup.c line 381). MAX_INST leaves room for that one. */
#define MAX_PROFILES 16
#define MAX_INSTANCES 64
#define MAX_INST (MAX_INSTANCES + 2)

/* The driver's default sMLU profiles: the whole chip, 1/2, 1/4 (ids 0, 1,
 * 2; smlu/smlu_internal.h default_profile_spec in the MLU driver). */
static const int spec[NPROFILES] = {1, 2, 4};

/* A profile: its IPU quota in percent of the chip, its memory in bytes
 * and how many of it fit on the empty chip (smlu/smlu_core.c
 * smlu_default_profile_init lines 141-181, cn_smlu_new_profile lines
 * 1006-1089). An instance keeps its quota and memory: the driver copies
 * them into the instance (smlu/smlu_cgroup.c lines 417-450). */
struct prof {
	int used;
	unsigned quota, total;
	unsigned long long mem;
};

struct inst {
	int id, profile;
	unsigned quota;
	unsigned long long mem;
	char name[CNDEV_MLUINSTANCE_PROFILE_NAME_BUFFER_SIZE];
};

struct dev {
	char name[128], uuid[CNDEV_UUID_SIZE];
	unsigned domain, bus, device, function;
	long long memory; /* MiB */
	int cores, health, driverstate;
	int overall, incident; /* cndevGetCardHealthStateV2's grade and incident code */
	unsigned drv[3];
	int smlu; /* 1 on, 0 off, -1 not supported */
	int ports, port_up[MAX_PORT], port_remote[MAX_PORT];
	struct prof prof[MAX_PROFILES];
	int ninst;
	struct inst inst[MAX_INST];
};

static struct dev devs[MAX_DEV];
static int ndev = -1;

/* A fixture's hang, count or fail line: what one function does instead. */
#define MAX_QUIRKS 8
static struct quirk {
	char fn[64], file[256]; /* hang: the call blocks while file exists */
	int count, is_count;    /* count: the count the function reports */
	int is_fail, dev, code; /* fail: the code the function returns for dev */
} quirks[MAX_QUIRKS];
static int nquirks;

/* failing is the code a fail line makes fn return for device h, else
 * CNDEV_SUCCESS: one card's call failing while the others answer, as the
 * library does for a card in trouble (Cambricon's device plugin reads a
 * failed cndevGetCardHealthState as that card unhealthy,
 * cambricon-k8s-device-plugin@3c9ed24 device-plugin/pkg/mlu/cambricon.go
 * lines 224-227). */
static int failing(const char *fn, int h) {
	for (int i = 0; i < nquirks; i++)
		if (quirks[i].is_fail && quirks[i].dev == h && !strcmp(quirks[i].fn, fn))
			return quirks[i].code;
	return CNDEV_SUCCESS;
}

/* hanging blocks while a hang line's file exists: a wedged driver call. */
static void hanging(const char *fn) {
	for (int i = 0; i < nquirks; i++)
		if (!quirks[i].is_count && !quirks[i].is_fail && !strcmp(quirks[i].fn, fn))
			while (access(quirks[i].file, F_OK) == 0)
				usleep(10000);
}

/* counted is n, or a count line's count for fn. */
static int counted(const char *fn, int n) {
	for (int i = 0; i < nquirks; i++)
		if (quirks[i].is_count && !strcmp(quirks[i].fn, fn))
			n = quirks[i].count;
	return n;
}

static const char *env(const char *k) {
	const char *v = getenv(k);
	return v && *v ? v : NULL;
}

/* The state file: a line "p <dev> <id> <quota> <bytes>" per profile made
 * with cndevCreateSMluProfileInfo and "<dev> <id> <profile> <name> <quota>
 * <bytes>" per instance. */
static void save(void) {
	const char *p = env("ACCEL_DRA_CNDEV_MOCK_STATE");
	if (!p)
		return;
	FILE *f = fopen(p, "w");
	if (!f)
		return;
	for (int d = 0; d < ndev; d++)
		for (int i = NPROFILES; i < MAX_PROFILES; i++)
			if (devs[d].prof[i].used)
				fprintf(f, "p %d %d %u %llu\n", d, i, devs[d].prof[i].quota, devs[d].prof[i].mem);
	for (int d = 0; d < ndev; d++)
		for (int i = 0; i < devs[d].ninst; i++) {
			struct inst *in = &devs[d].inst[i];
			fprintf(f, "%d %d %d %s %u %llu\n", d, in->id, in->profile, in->name, in->quota, in->mem);
		}
	fclose(f);
}

static void set_profile(struct dev *d, int id, unsigned quota, unsigned long long mem) {
	unsigned long long total = (unsigned long long)d->memory << 20;
	d->prof[id].used = 1;
	d->prof[id].quota = quota;
	d->prof[id].mem = mem;
	/* how many fit on the empty chip: smlu_core.c lines 1047-1048 */
	d->prof[id].total = total / mem < 100 / quota ? total / mem : 100 / quota;
}

static void load_state(void) {
	for (int d = 0; d < ndev; d++)
		for (int i = 0; i < NPROFILES && devs[d].memory > 0; i++)
			set_profile(&devs[d], i, 100 / spec[i], ((unsigned long long)devs[d].memory << 20) / spec[i]);
	const char *p = env("ACCEL_DRA_CNDEV_MOCK_STATE");
	FILE *f = p ? fopen(p, "r") : NULL;
	if (!f)
		return;
	char line[256], name[CNDEV_MLUINSTANCE_PROFILE_NAME_BUFFER_SIZE];
	int d, id, prof;
	unsigned quota;
	unsigned long long mem;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "p %d %d %u %llu", &d, &id, &quota, &mem) == 4) {
			if (d >= 0 && d < ndev && id >= 0 && id < MAX_PROFILES && quota > 0 && mem > 0)
				set_profile(&devs[d], id, quota, mem);
			continue;
		}
		/* a line without quota and memory takes its profile's */
		int n = sscanf(line, "%d %d %d %99s %u %llu", &d, &id, &prof, name, &quota, &mem);
		if ((n != 6 && n != 4) || d < 0 || d >= ndev || devs[d].ninst >= MAX_INST)
			continue;
		if (n == 4) {
			if (prof < 0 || prof >= MAX_PROFILES || !devs[d].prof[prof].used)
				continue;
			quota = devs[d].prof[prof].quota;
			mem = devs[d].prof[prof].mem;
		}
		struct inst *in = &devs[d].inst[devs[d].ninst++];
		in->id = id;
		in->profile = prof;
		in->quota = quota;
		in->mem = mem;
		snprintf(in->name, sizeof in->name, "%s", name);
	}
	fclose(f);
}

/* value returns the value of key=... in a fixture line, or NULL. */
static const char *value(char *line, const char *key, char *buf, size_t n) {
	size_t kl = strlen(key);
	for (char *p = line; (p = strstr(p, key)); p += kl) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			size_t l = strcspn(p + kl + 1, " \n");
			if (l >= n)
				l = n - 1;
			memcpy(buf, p + kl + 1, l);
			buf[l] = 0;
			return buf;
		}
	}
	return NULL;
}

cndevRet_t cndevInit(int32_t reserved) {
	(void)reserved;
	const char *p = env("ACCEL_DRA_CNDEV_MOCK_FIXTURE");
	FILE *f = p ? fopen(p, "r") : NULL;
	if (!f)
		return CNDEV_ERROR_UNKNOWN;
	memset(devs, 0, sizeof devs);
	ndev = 0;
	nquirks = 0;
	char line[512], v[128];
	while (fgets(line, sizeof line, f)) {
		if ((!strncmp(line, "hang ", 5) || !strncmp(line, "count ", 6) || !strncmp(line, "fail ", 5)) && nquirks < MAX_QUIRKS) {
			struct quirk *q = &quirks[nquirks++];
			q->is_count = line[0] == 'c';
			q->is_fail = line[0] == 'f';
			q->dev = value(line, "dev", v, sizeof v) ? atoi(v) : -1;
			q->code = value(line, "code", v, sizeof v) ? atoi(v) : CNDEV_ERROR_UNKNOWN;
			snprintf(q->fn, sizeof q->fn, "%s", value(line, "fn", v, sizeof v) ? v : "");
			if (value(line, "while", v, sizeof v))
				snprintf(q->file, sizeof q->file, "%s", v);
			q->count = value(line, "n", v, sizeof v) ? atoi(v) : 0;
		} else if (!strncmp(line, "device ", 7) && ndev < MAX_DEV) {
			struct dev *d = &devs[ndev++];
			snprintf(d->name, sizeof d->name, "%s", value(line, "name", v, sizeof v) ? v : "");
			snprintf(d->uuid, sizeof d->uuid, "%s", value(line, "uuid", v, sizeof v) ? v : "");
			if (value(line, "bdf", v, sizeof v))
				sscanf(v, "%x:%x:%x.%x", &d->domain, &d->bus, &d->device, &d->function);
			d->memory = value(line, "memory", v, sizeof v) ? atoll(v) : 0;
			d->cores = value(line, "cores", v, sizeof v) ? atoi(v) : 0;
			if (value(line, "driver", v, sizeof v))
				sscanf(v, "%u.%u.%u", &d->drv[0], &d->drv[1], &d->drv[2]);
			d->health = !(value(line, "health", v, sizeof v) && !strcmp(v, "problem"));
			d->driverstate = value(line, "driverstate", v, sizeof v) ? atoi(v) : CNDEV_HEALTH_STATE_DRIVER_RUNNING;
			d->overall = CNDEV_HEALTH_RESULT_PASS;
			if (value(line, "overall", v, sizeof v))
				d->overall = !strcmp(v, "warn") ? CNDEV_HEALTH_RESULT_WARN : !strcmp(v, "fail") ? CNDEV_HEALTH_RESULT_FAIL : CNDEV_HEALTH_RESULT_PASS;
			d->incident = value(line, "incident", v, sizeof v) ? atoi(v) : 0;
			d->smlu = -1;
			if (value(line, "smlu", v, sizeof v))
				d->smlu = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 0 : -1;
		} else if (!strncmp(line, "link ", 5)) {
			int dv = value(line, "dev", v, sizeof v) ? atoi(v) : -1;
			int port = value(line, "port", v, sizeof v) ? atoi(v) : -1;
			if (dv < 0 || dv >= ndev || port < 0 || port >= MAX_PORT)
				continue;
			struct dev *d = &devs[dv];
			if (port + 1 > d->ports)
				d->ports = port + 1;
			d->port_up[port] = value(line, "state", v, sizeof v) && !strcmp(v, "up");
			d->port_remote[port] = value(line, "remote", v, sizeof v) ? atoi(v) : -1;
		}
	}
	fclose(f);
	load_state();
	return CNDEV_SUCCESS;
}

cndevRet_t cndevRelease(void) { return CNDEV_SUCCESS; }

const char *cndevGetErrorString(cndevRet_t e) {
	switch (e) {
	case CNDEV_SUCCESS: return "success";
	case CNDEV_ERROR_UNINITIALIZED: return "not initialized";
	case CNDEV_ERROR_INVALID_ARGUMENT: return "invalid argument";
	case CNDEV_ERROR_INVALID_DEVICE_ID: return "invalid device id";
	case CNDEV_ERROR_INSUFFICIENT_SPACE: return "insufficient space";
	case CNDEV_ERROR_NOT_SUPPORTED: return "not supported";
	case CNDEV_ERROR_NOT_FOUND: return "not found";
	case CNDEV_ERROR_DUPLICATE: return "duplicate";
	default: return "unknown error";
	}
}

#define DEV(h)                                   \
	hanging(__func__);                       \
	if (ndev < 0)                            \
		return CNDEV_ERROR_UNINITIALIZED; \
	if ((h) < 0 || (h) >= ndev)              \
		return CNDEV_ERROR_INVALID_DEVICE_ID; \
	if (failing(__func__, h))                \
		return failing(__func__, h);     \
	struct dev *d = &devs[h]

cndevRet_t cndevGetDeviceCount(cndevCardInfo_t *c) {
	hanging(__func__);
	if (ndev < 0)
		return CNDEV_ERROR_UNINITIALIZED;
	c->number = counted(__func__, ndev);
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetDeviceHandleByIndex(int32_t index, cndevDevice_t *h) {
	DEV(index);
	(void)d;
	*h = index;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetUUID(cndevUUID_t *u, cndevDevice_t h) {
	DEV(h);
	memcpy(u->uuid, d->uuid, CNDEV_UUID_SIZE);
	u->ncsUUID64 = 0;
	return CNDEV_SUCCESS;
}

const char *cndevGetCardNameStringByDevId(cndevDevice_t h) {
	if (h < 0 || h >= ndev)
		return "Unknown";
	return devs[h].name;
}

cndevRet_t cndevGetMemoryUsageV2(cndevMemoryInfoV2_t *m, cndevDevice_t h) {
	DEV(h);
	memset(m, 0, sizeof *m);
	m->physicalMemoryTotal = d->memory;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetVersionInfo(cndevVersionInfo_t *v, cndevDevice_t h) {
	DEV(h);
	v->driverMajorVersion = d->drv[0];
	v->driverMinorVersion = d->drv[1];
	v->driverBuildVersion = d->drv[2];
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetCoreCount(cndevCardCoreCount_t *c, cndevDevice_t h) {
	DEV(h);
	if (!d->cores)
		return CNDEV_ERROR_NOT_SUPPORTED;
	c->count = d->cores;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetCardHealthState(cndevCardHealthState_t *s, cndevDevice_t h) {
	DEV(h);
	s->health = d->health;
	s->deviceState = d->health ? CNDEV_HEALTH_STATE_DEVICE_GOOD : CNDEV_HEALTH_STATE_DEVICE_IN_PROBLEM;
	s->driverState = d->driverstate;
	return CNDEV_SUCCESS;
}

#ifndef CNDEV_MOCK_NO_HEALTH_V2
/* The V1 states plus the overall grade; a fixture's incident=<code> is one
 * incident of that grade (older libraries lack the function: build with
 * -DCNDEV_MOCK_NO_HEALTH_V2). */
cndevRet_t cndevGetCardHealthStateV2(cndevCardHealthStateV2_t *s, cndevDevice_t h) {
	DEV(h);
	memset(s, 0, sizeof *s);
	s->health = d->health && d->overall != CNDEV_HEALTH_RESULT_FAIL;
	s->deviceState = d->health ? CNDEV_HEALTH_STATE_DEVICE_GOOD : CNDEV_HEALTH_STATE_DEVICE_IN_PROBLEM;
	s->driverState = d->driverstate;
	s->overallHealth = d->overall;
	if (d->incident) {
		s->incident_count = 1;
		s->incidents[0].health = d->overall;
		s->incidents[0].error.code = d->incident;
		snprintf(s->incidents[0].error.msg, sizeof s->incidents[0].error.msg, "mock incident %d on card %d", d->incident, h);
	}
	return CNDEV_SUCCESS;
}
#endif

cndevRet_t cndevGetPCIeInfoV2(cndevPCIeInfoV2_t *p, cndevDevice_t h) {
	DEV(h);
	memset(p, 0, sizeof *p);
	p->vendor = 0xcabc;
	p->domain = d->domain;
	p->bus = d->bus;
	p->device = d->device;
	p->function = d->function;
	return CNDEV_SUCCESS;
}

int32_t cndevGetMLULinkPortNumber(cndevDevice_t h) {
	hanging(__func__);
	if (h < 0 || h >= ndev)
		return 0;
	return counted(__func__, devs[h].ports);
}

cndevRet_t cndevGetMLULinkStatusV2(cndevMLULinkStatusV2_t *s, cndevDevice_t h, int32_t link) {
	DEV(h);
	if (link < 0 || link >= d->ports)
		return CNDEV_ERROR_INVALID_ARGUMENT;
	memset(s, 0, sizeof *s);
	s->macState = d->port_up[link] ? CNDEV_MLULINK_MAC_STATE_UP : CNDEV_MLULINK_MAC_STATE_DOWN;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetMLULinkRemoteInfo(cndevMLULinkRemoteInfo_t *r, cndevDevice_t h, int32_t link) {
	DEV(h);
	if (link < 0 || link >= d->ports)
		return CNDEV_ERROR_INVALID_ARGUMENT;
	memset((char *)r + sizeof r->version, 0, sizeof *r - sizeof r->version);
	int rem = d->port_remote[link];
	if (rem >= 0 && rem < ndev)
		memcpy(r->uuid, devs[rem].uuid, CNDEV_UUID_SIZE);
	r->portId = link;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetSMLUMode(cndevSMLUMode_t *m, cndevDevice_t h) {
	DEV(h);
	if (d->smlu < 0)
		return CNDEV_ERROR_NOT_SUPPORTED;
	m->smluMode = d->smlu ? CNDEV_FEATURE_ENABLED : CNDEV_FEATURE_DISABLED;
	return CNDEV_SUCCESS;
}

static unsigned used_quota(struct dev *d) {
	unsigned q = 0;
	for (int i = 0; i < d->ninst; i++)
		q += d->inst[i].quota;
	return q;
}

static unsigned long long used_mem(struct dev *d) {
	unsigned long long m = 0;
	for (int i = 0; i < d->ninst; i++)
		m += d->inst[i].mem;
	return m;
}

cndevRet_t cndevGetSMluProfileIdInfo(cndevSMluProfileIdInfo_t *p, cndevDevice_t h) {
	DEV(h);
	if (d->smlu != 1)
		return CNDEV_ERROR_NOT_SUPPORTED;
	/* the profiles that exist, in id order (smlu_core.c lines 874-909) */
	p->count = 0;
	for (int i = 0; i < MAX_PROFILES; i++)
		if (d->prof[i].used)
			p->profileId[p->count++] = i;
	return CNDEV_SUCCESS;
}

static void profile_name(char *buf, size_t n, unsigned quota, unsigned long long mem) {
	/* The driver's names: "%llup.%llumb", quota in percent, MiB
	 * (smlu_core.c lines 172-174, 1069-1071). */
	snprintf(buf, n, "%up.%llumb", quota, mem >> 20);
}

cndevRet_t cndevGetSMluProfileInfo(cndevSMluProfileInfo_t *p, int32_t profile, cndevDevice_t h) {
	DEV(h);
	if (d->smlu != 1)
		return CNDEV_ERROR_NOT_SUPPORTED;
	if (profile < 0 || profile >= MAX_PROFILES || !d->prof[profile].used)
		return CNDEV_ERROR_NOT_FOUND;
	struct prof *pr = &d->prof[profile];
	p->profileId = profile;
	profile_name(p->name, sizeof p->name, pr->quota, pr->mem);
	p->totalCapacity = pr->total;
	/* what still fits (smlu_core.c lines 911-957) */
	unsigned long long left_mem = ((unsigned long long)d->memory << 20) - used_mem(d);
	unsigned rem = (100 - used_quota(d)) / pr->quota;
	if (left_mem / pr->mem < rem)
		rem = left_mem / pr->mem;
	p->remainCapacity = rem < MAX_INSTANCES ? rem : MAX_INSTANCES;
	p->mluQuota[CNDEV_SMLU_MAX] = pr->quota;
	p->mluQuota[CNDEV_SMLU_USAGE] = 0;
	p->memorySize[CNDEV_SMLU_MAX] = pr->mem;
	p->memorySize[CNDEV_SMLU_USAGE] = 0;
	return CNDEV_SUCCESS;
}

/* cndevCreateSMluProfileInfo refuses what the driver's cn_smlu_new_profile
 * refuses (smlu_core.c lines 1006-1089): sMLU off (-EINVAL, lines
 * 1019-1022; the library says not supported, as for every sMLU call on a
 * chip without it), a quota over 100% or memory over the chip's (-EINVAL,
 * lines 1026-1035), and a full table of MAX_SMLU_PROFILE_COUNT profiles
 * (-ENOSPC, lines 1076-1080; the header lists no space code for this call,
 * so it comes back as CNDEV_ERROR_UNKNOWN). A zero quota or size is
 * refused too: the driver divides by both (lines 1047-1048). */
cndevRet_t cndevCreateSMluProfileInfo(cndevSMluSet_t *set, int32_t *id, cndevDevice_t h) {
	DEV(h);
	if (d->smlu != 1)
		return CNDEV_ERROR_NOT_SUPPORTED;
	if (!set || !id)
		return CNDEV_ERROR_INVALID_ARGUMENT;
	if (set->mluQuota == 0 || set->memorySize == 0 || set->mluQuota > 100 ||
	    set->memorySize > ((unsigned long long)d->memory << 20))
		return CNDEV_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < MAX_PROFILES; i++) {
		if (d->prof[i].used)
			continue;
		set_profile(d, i, set->mluQuota, set->memorySize);
		*id = i;
		save();
		return CNDEV_SUCCESS;
	}
	return CNDEV_ERROR_UNKNOWN;
}

/* cndevDestroySMluProfileInfo: cn_smlu_delete_profile (smlu_core.c lines
 * 1091-1125) refuses an id out of range or of no profile (-EINVAL), and
 * nothing else: instances keep their own quota. */
cndevRet_t cndevDestroySMluProfileInfo(int32_t id, cndevDevice_t h) {
	DEV(h);
	if (d->smlu != 1)
		return CNDEV_ERROR_NOT_SUPPORTED;
	if (id < 0 || id >= MAX_PROFILES || !d->prof[id].used)
		return CNDEV_ERROR_INVALID_ARGUMENT;
	d->prof[id].used = 0;
	save();
	return CNDEV_SUCCESS;
}

static void node(int dev, int id, char *buf, size_t n) {
	snprintf(buf, n, "/dev/cambricon-caps/cap_dev%d_mi%d", dev, id);
}

static void touch(int dev, int id, int create) {
	const char *root = env("ACCEL_DRA_CNDEV_MOCK_ROOT");
	if (!root)
		return;
	char n[CNDEV_MLUINSTANCE_DEVICE_NODE_NAME_BUFFER_SIZE], p[1024];
	node(dev, id, n, sizeof n);
	snprintf(p, sizeof p, "%s/dev", root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/dev/cambricon-caps", root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s%s", root, n);
	if (create) {
		/* a /dev/null clone where allowed (root), as the simulated
		 * tools make, else a plain file */
		if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) != 0 && errno != EEXIST) {
			FILE *f = fopen(p, "w");
			if (f)
				fclose(f);
		}
	} else {
		unlink(p);
	}
}

/* An instance is refused, as cn_smlu_cap_node_init refuses it
 * (smlu/smlu_cgroup.c lines 363-470), when more than
 * MAX_SMLU_INSTANCE_COUNT exist (line 381) or its quota or memory is more
 * than the chip has left (lines 402-463); the driver returns -EFAULT "to
 * be consistent with cnmon" and the library insufficient space, one of
 * the codes the header lists for this call. */
cndevRet_t cndevCreateSMluInstanceByProfileId(cndevMluInstance_t *mi, uint32_t profile, cndevDevice_t h, char *name) {
	DEV(h);
	if (d->smlu != 1)
		return CNDEV_ERROR_NOT_SUPPORTED;
	if (profile >= MAX_PROFILES || !d->prof[profile].used)
		return CNDEV_ERROR_NOT_FOUND;
	struct prof *pr = &d->prof[profile];
	if (d->ninst > MAX_INSTANCES || d->ninst >= MAX_INST || used_quota(d) + pr->quota > 100 ||
	    used_mem(d) + pr->mem > ((unsigned long long)d->memory << 20))
		return CNDEV_ERROR_INSUFFICIENT_SPACE;
	int id = 1; /* mi0 is the physical function */
	for (int again = 1; again;) {
		again = 0;
		for (int i = 0; i < d->ninst; i++)
			if (d->inst[i].id == id) {
				id++;
				again = 1;
			}
	}
	struct inst *in = &d->inst[d->ninst];
	in->id = id;
	in->profile = profile;
	in->quota = pr->quota;
	in->mem = pr->mem;
	if (name && *name)
		snprintf(in->name, sizeof in->name, "%s", name);
	else
		snprintf(in->name, sizeof in->name, "smlu%d-%d", h, id);
	for (int i = 0; i < d->ninst; i++)
		if (!strcmp(d->inst[i].name, in->name))
			return CNDEV_ERROR_DUPLICATE;
	d->ninst++;
	*mi = h * 1000 + id;
	touch(h, id, 1);
	save();
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetAllSMluInstanceInfo(int32_t *count, cndevSMluInfo_t *info, cndevDevice_t h) {
	DEV(h);
	if (d->smlu != 1)
		return CNDEV_ERROR_NOT_SUPPORTED;
	if (*count < d->ninst) {
		*count = d->ninst;
		return CNDEV_ERROR_INSUFFICIENT_SPACE;
	}
	*count = d->ninst;
	for (int i = 0; i < d->ninst; i++) {
		cndevSMluInfo_t *o = &info[i];
		struct inst *in = &d->inst[i];
		int32_t version = o->version;
		memset(o, 0, sizeof *o);
		o->version = version;
		o->profileId = in->profile;
		o->instanceId = in->id;
		/* the chip's UUID with the instance id in its last group */
		char u[CNDEV_UUID_SIZE];
		snprintf(u, sizeof u, "%.24s%012d", d->uuid, in->id);
		memcpy(o->uuid, u, CNDEV_UUID_SIZE);
		o->domain = d->domain;
		o->bus = d->bus;
		o->device = d->device;
		o->function = d->function;
		profile_name(o->profileName, sizeof o->profileName, in->quota, in->mem);
		snprintf(o->instanceName, sizeof o->instanceName, "%s", in->name);
		node(h, in->id, o->devNodeName, sizeof o->devNodeName);
		o->mluQuota[CNDEV_SMLU_MAX] = in->quota;
		o->memorySize[CNDEV_SMLU_MAX] = in->mem;
	}
	return CNDEV_SUCCESS;
}

cndevRet_t cndevDestroySMluInstanceByInstanceName(cndevDevice_t h, char *name) {
	DEV(h);
	for (int i = 0; i < d->ninst; i++) {
		if (strcmp(d->inst[i].name, name))
			continue;
		touch(h, d->inst[i].id, 0);
		d->inst[i] = d->inst[--d->ninst];
		save();
		return CNDEV_SUCCESS;
	}
	return CNDEV_ERROR_NOT_FOUND;
}

/* ------------------------------------------------------------------------
 * Telemetry: utilization, temperature and power, read by the node agent's
 * chip metrics (pkg/vendors/cambricon/telemetry.go). The values come from
 * the file named in ACCEL_DRA_CNDEV_MOCK_TELEMETRY, re-read at every call
 * so a test can change a chip's load between reads:
 *   load dev=<index> util=<%> temp=<°C> power=<W>
 *   fail dev=<index> fn=<cndev function> code=<cndevRet_t>
 * A device it does not list is idle: 0%, 35 °C, 30 W.
 * ------------------------------------------------------------------------ */

struct telemetry {
	int util, temp, power;
	char fail_fn[64];
	int fail_code;
};

static void read_telemetry(int dev, struct telemetry *t) {
	memset(t, 0, sizeof *t);
	t->temp = 35;
	t->power = 30;
	const char *p = env("ACCEL_DRA_CNDEV_MOCK_TELEMETRY");
	FILE *f = p ? fopen(p, "r") : NULL;
	if (!f)
		return;
	char line[256], v[64];
	while (fgets(line, sizeof line, f)) {
		if (!value(line, "dev", v, sizeof v) || atoi(v) != dev)
			continue;
		if (!strncmp(line, "load ", 5)) {
			t->util = value(line, "util", v, sizeof v) ? atoi(v) : 0;
			t->temp = value(line, "temp", v, sizeof v) ? atoi(v) : 35;
			t->power = value(line, "power", v, sizeof v) ? atoi(v) : 30;
		} else if (!strncmp(line, "fail ", 5)) {
			snprintf(t->fail_fn, sizeof t->fail_fn, "%s", value(line, "fn", v, sizeof v) ? v : "");
			t->fail_code = value(line, "code", v, sizeof v) ? atoi(v) : CNDEV_ERROR_UNKNOWN;
		}
	}
	fclose(f);
}

#define TELEMETRY(t, h)                                                 \
	struct telemetry t;                                             \
	read_telemetry(h, &t);                                          \
	if (t.fail_code != 0 && !strcmp(t.fail_fn, __func__))           \
		return t.fail_code

cndevRet_t cndevGetDeviceUtilizationInfo(cndevUtilizationInfo_t *u, cndevDevice_t h) {
	DEV(h);
	TELEMETRY(t, h);
	if (u->version != CNDEV_VERSION_6)
		return CNDEV_ERROR_INVALID_ARGUMENT;
	u->averageCoreUtilization = t.util;
	for (int i = 0; i < 80; i++)
		u->coreUtilization[i] = i < d->cores ? t.util : 0;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetTemperatureInfo(cndevTemperatureInfo_t *tp, cndevDevice_t h) {
	DEV(h);
	(void)d;
	TELEMETRY(t, h);
	if (tp->version != CNDEV_VERSION_6)
		return CNDEV_ERROR_INVALID_ARGUMENT;
	tp->board = t.temp;
	tp->chip = t.temp - 2;
	tp->cluster[0] = t.temp - 2;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetDevicePowerInfo(cndevDevicePowerInfo_t *pw, cndevDevice_t h) {
	DEV(h);
	(void)d;
	TELEMETRY(t, h);
	memset(pw, 0, sizeof *pw);
	pw->usage = t.power;
	pw->tdp = 250;
	return CNDEV_SUCCESS;
}
