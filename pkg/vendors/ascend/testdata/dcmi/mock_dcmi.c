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
 * A mock of Huawei's libdcmi.so for accel-dra's tests, written for them
 * (no vendor code): the tests build it with
 *   gcc -shared -fPIC -o libdcmi.so mock_dcmi.c
 * and the Ascend backend loads it as it loads the real library. It serves
 * the node described by the fixture file named in ACCEL_DRA_DCMI_FIXTURE
 * (format in README.md beside this file), re-read by every dcmi_init, and
 * keeps the vNPUs it creates in the file named in ACCEL_DRA_DCMI_STATE
 * when that is set, so separate processes (the node agent, a test) see
 * the same vNPUs. ACCEL_DRA_DCMI_ROOT is the root under which it finds
 * the host files the real library opens by absolute path
 * (/run/vnpu_cfg_lock, /etc/vnpu.cfg); unset, it opens them at /.
 *
 * Behaviour follows the DCMI implementation in Huawei's CANN driver
 * source (GitHub verylucky01/driver, commit e29d066); "dcmi/…" paths below
 * are under src/custom/dev_prod/user/ there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcmi.h"

/* DCMI return codes (mind-cluster dcmi constants and the DCMI reference). */
#define DCMI_OK 0
#define DCMI_ERR_INVALID_PARAMETER (-8001)
#define DCMI_ERR_INNER (-8005)
#define DCMI_ERR_OPER_NOT_PERMITTED (-8002)
#define DCMI_ERR_DEVICE_NOT_EXIST (-8008)
#define DCMI_ERR_FILE_OPERATE_FAIL (-8014)
#define DCMI_ERR_RESOURCE_OCCUPIED (-8020)
#define DCMI_ERR_NOT_SUPPORT (-8255)

#define MAX_CHIPS 64
#define MAX_CODES 16
#define MAX_VDEVS 256
#define MAX_FAILS 16

struct chip {
    int card, device, logic, phy;
    char name[MAX_CHIP_NAME_LEN];
    unsigned int aicore;
    unsigned long long hbm_mb, ddr_mb;
    int domain;
    unsigned int bus, dev, fn, pci_device_id;
    unsigned int health;
    unsigned int codes[MAX_CODES];
    int ncodes;
    int has_ip;
    unsigned char ip[4], mask[4];
    /* spod-chip overrides: what this chip says instead (-1: as computed) */
    long long spod_sdid, spod_id, spod_server;
};

/* The node's super pod (spod line), which only 910_93 chips answer. */
struct spod {
    int set;
    unsigned int id, size, server, chassis, type;
};

struct vdev {
    int logic;
    unsigned int id;
    unsigned int vfg; /* the vGroup it was put in (not kept in the state file) */
    char template_name[TEMPLATE_NAME_LEN];
};

/* Where the caller runs, as the library decides it (the mock's caller is
 * always root, never in a VM). dcmi_init decides once whether it runs in a
 * container, from what it sees of its filesystem (in_container below,
 * dcmi/dcmi_inner/src/dcmi_environment_judge.c:203-290): in_docker,
 * dcmi_check_run_in_docker. The kernel driver only tells an unprivileged
 * ("plain") container from anything else (dmanage_get_container_flag: the
 * fixture's container-flag line), and the two make the environment flag
 * (dcmi_determine_environment_flag, 94-121). The checks the mock makes:
 *   dcmi_is_in_phy_machine_root        !in_docker (341-344): what DCMI
 *                                      takes for root on the host
 *   dcmi_is_in_phy_privileged_docker_root  in_docker and not plain (361-364)
 * So a container DCMI does not detect is the host to it. */

/* Board chip types as the library tells them (dcmi_board_chip_type_is_*),
 * from the first chip's name. */
enum chip_type { CHIP_910, CHIP_910B, CHIP_910_93, CHIP_310P, CHIP_950 };

/* vfg_id "unspecified": the library picks the vGroup. */
#define VFG_ID_ANY 0xFFFFFFFFu

/* A fixture's fail, hang or count line: what one function does instead. */
enum fail_kind { FAIL_RETURN, FAIL_HANG, FAIL_COUNT };

struct fail {
    enum fail_kind kind;
    int logic;      /* FAIL_RETURN: the chip it fails on, -1 every chip */
    char fn[64];
    int code;       /* FAIL_RETURN: the return code; FAIL_COUNT: the count */
    char file[256]; /* FAIL_HANG: the call blocks while this file exists */
};

static struct chip chips[MAX_CHIPS];
static int nchips;
static int load_v2_line(const char *kind, const char *line); /* mock_dcmiv2.c */
static struct spod spod;
/* What the super pod's fabric records of other NPUs, by SDID
 * (spod-node-status lines; what dcmi_set_spod_node_status sets): 1 is
 * "abnormal", and an SDID without a record is 0, "normal". */
#define MAX_SPOD_NODE_STATUS 64
static struct {
    unsigned int sdid, status;
} spod_node_status_of[MAX_SPOD_NODE_STATUS];
static int nspod_node_status;

/* read_spod_node_status adds one spod-node-status line's record. */
static int read_spod_node_status(const char *line) {
    unsigned int sdid, status;
    if (nspod_node_status >= MAX_SPOD_NODE_STATUS || sscanf(line, "spod-node-status %u %u", &sdid, &status) != 2) {
        return 0;
    }
    spod_node_status_of[nspod_node_status].sdid = sdid;
    spod_node_status_of[nspod_node_status].status = status;
    nspod_node_status++;
    return 1;
}

/* reload_spod_node_status reads the records again from the fixture: the
 * driver asks the device at every call, so a record set after dcmi_init
 * (a link that degrades while the agent runs) is seen at the next one. */
static void reload_spod_node_status(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_FIXTURE");
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[512];
    if (f == NULL) {
        return;
    }
    nspod_node_status = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "spod-node-status ", 17) == 0) {
            read_spod_node_status(line);
        }
    }
    fclose(f);
}
static int topo[MAX_CHIPS][MAX_CHIPS]; /* by logic id; -1 = default */
static int topo_default = DCMI_TOPO_TYPE_SYS;
static int docker_mode = 1;
static int in_docker;       /* dcmi_check_run_in_docker: the detection */
static int plain_container; /* the fixture's container-flag plain */
/* The driver version dcmi_get_driver_version reports: by default that of
 * the driver source the mock follows (25.3.rc1, its version_cap.map). */
#define DEFAULT_DRIVER_VERSION "25.3.rc1"
static char driver_version[64] = DEFAULT_DRIVER_VERSION;
static struct vdev vdevs[MAX_VDEVS];
static int nvdevs;
static struct fail fails[MAX_FAILS];
static int nfails;
static int initialized;

/* failing returns what fn returns instead on the chip with the given logic
 * id (-1: a call not about one chip). */
static int failing_on(const char *fn, int logic) {
    for (int i = 0; i < nfails; i++) {
        if (fails[i].kind == FAIL_RETURN && strcmp(fails[i].fn, fn) == 0 &&
            (fails[i].logic < 0 || fails[i].logic == logic)) {
            return fails[i].code;
        }
    }
    return 0;
}

static int failing(const char *fn) {
    for (int i = 0; i < nfails; i++) {
        if (fails[i].kind == FAIL_RETURN && fails[i].logic < 0 && strcmp(fails[i].fn, fn) == 0) {
            return fails[i].code;
        }
    }
    return 0;
}

static enum chip_type chip_type(void) {
    const char *name = nchips > 0 ? chips[0].name : "";
    if (strncmp(name, "310P", 4) == 0) {
        return CHIP_310P;
    }
    if (strncmp(name, "910B", 4) == 0) {
        return CHIP_910B;
    }
    if (strncmp(name, "910_93", 6) == 0) {
        return CHIP_910_93; /* the A3 die's name as the driver knows it, 910_93xx */
    }
    if (strncmp(name, "950", 3) == 0) {
        return CHIP_950; /* 950PR_95xx, 950DT_95xx (dcmi_init_basic.c:568-569) */
    }
    return CHIP_910;
}

/* host_path is path under ACCEL_DRA_DCMI_ROOT. */
static void host_path(char *out, size_t n, const char *path) {
    const char *root = getenv("ACCEL_DRA_DCMI_ROOT");
    snprintf(out, n, "%s%s", root == NULL ? "" : root, path);
}

/* hanging blocks while a hang line's file exists: a wedged driver call. */
static void hanging(const char *fn) {
    for (int i = 0; i < nfails; i++) {
        if (fails[i].kind == FAIL_HANG && strcmp(fails[i].fn, fn) == 0) {
            while (access(fails[i].file, F_OK) == 0) {
                usleep(10000);
            }
        }
    }
}

/* counted replaces a count the function reports by a count line's. */
static void counted(const char *fn, int *n) {
    for (int i = 0; i < nfails; i++) {
        if (fails[i].kind == FAIL_COUNT && strcmp(fails[i].fn, fn) == 0) {
            *n = fails[i].code;
        }
    }
}

#define FAIL_IF_ASKED()                      \
    do {                                     \
        hanging(__func__);                   \
        int rc_ = failing(__func__);         \
        if (rc_ != 0) {                      \
            return rc_;                      \
        }                                    \
        if (!initialized) {                  \
            return DCMI_ERR_OPER_NOT_PERMITTED; \
        }                                    \
    } while (0)

static struct chip *by_card(int card, int device) {
    for (int i = 0; i < nchips; i++) {
        if (chips[i].card == card && chips[i].device == device) {
            return &chips[i];
        }
    }
    return NULL;
}

static struct chip *by_logic(int logic) {
    for (int i = 0; i < nchips; i++) {
        if (chips[i].logic == logic) {
            return &chips[i];
        }
    }
    return NULL;
}

static int parse_ip(const char *s, unsigned char ip[4], unsigned char mask[4]) {
    unsigned int a, b, c, d, bits;
    if (sscanf(s, "%u.%u.%u.%u/%u", &a, &b, &c, &d, &bits) != 5 || bits > 32) {
        return -1;
    }
    ip[0] = a, ip[1] = b, ip[2] = c, ip[3] = d;
    unsigned long m = bits == 0 ? 0 : 0xffffffffUL << (32 - bits);
    mask[0] = m >> 24, mask[1] = m >> 16, mask[2] = m >> 8, mask[3] = m;
    return 0;
}

/* topo_code reads a topology code: a name of the current header's
 * DCMI_TOPO_TYPE_* (dcmi_interface_api.h:1487-1496), or a number, which
 * the library returns as it is (another driver generation's code, or BUTT). */
static int topo_code(const char *s) {
    static const char *names[] = {"X", "SYS", "PHB", "HCCS", "PXB", "PIX", "SIO", "HCCS_SW", "UB", "BUTT"};
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
        if (strcmp(s, names[i]) == 0) {
            return i;
        }
    }
    char *end;
    long n = strtol(s, &end, 10);
    if (*s != '\0' && *end == '\0' && n >= 0 && n < 1000) {
        return (int)n;
    }
    return -1;
}

static void load_state(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_STATE");
    if (path == NULL || *path == '\0') {
        return;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    nvdevs = 0;
    struct vdev v;
    v.vfg = 0;
    while (nvdevs < MAX_VDEVS && fscanf(f, "%d %u %31s", &v.logic, &v.id, v.template_name) == 3) {
        vdevs[nvdevs++] = v;
    }
    fclose(f);
}

static void save_state(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_STATE");
    if (path == NULL || *path == '\0') {
        return;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return;
    }
    for (int i = 0; i < nvdevs; i++) {
        fprintf(f, "%d %u %s\n", vdevs[i].logic, vdevs[i].id, vdevs[i].template_name);
    }
    fclose(f);
}

/* load reads the fixture; it returns 0, or the line number of a line it
 * cannot read (the mock then fails dcmi_init, so a broken fixture shows). */
static int load(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_FIXTURE");
    nchips = 0, nvdevs = 0, nfails = 0, docker_mode = 1, topo_default = DCMI_TOPO_TYPE_SYS, plain_container = 0;
    memset(&spod, 0, sizeof(spod));
    nspod_node_status = 0;
    snprintf(driver_version, sizeof(driver_version), "%s", DEFAULT_DRIVER_VERSION);
    memset(topo, -1, sizeof(topo));
    if (path == NULL) {
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char line[512];
    int no = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        no++;
        char *hash = strchr(line, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char kind[32] = "";
        if (sscanf(line, "%31s", kind) != 1) {
            continue;
        }
        int ok = 0;
        if (strcmp(kind, "chip") == 0 && nchips < MAX_CHIPS) {
            struct chip *c = &chips[nchips];
            memset(c, 0, sizeof(*c));
            ok = sscanf(line, "chip %d %d %d %d %31s %u %llu %llu %x:%x:%x.%x %x %u", &c->card, &c->device, &c->logic,
                        &c->phy, c->name, &c->aicore, &c->hbm_mb, &c->ddr_mb, (unsigned int *)&c->domain, &c->bus,
                        &c->dev, &c->fn, &c->pci_device_id, &c->health) == 14;
            c->spod_sdid = c->spod_id = c->spod_server = -1;
            if (ok) {
                nchips++;
            }
        } else if (strcmp(kind, "spod") == 0) {
            ok = sscanf(line, "spod %u %u %u %u %u", &spod.id, &spod.size, &spod.server, &spod.chassis, &spod.type) == 5;
            spod.set = ok;
        } else if (strcmp(kind, "spod-node-status") == 0) {
            ok = read_spod_node_status(line);
        } else if (strcmp(kind, "spod-chip") == 0) {
            int logic;
            char field[32];
            long long value;
            struct chip *c;
            ok = sscanf(line, "spod-chip %d %31s %lli", &logic, field, &value) == 3 && (c = by_logic(logic)) != NULL;
            if (ok && strcmp(field, "sdid") == 0) {
                c->spod_sdid = value;
            } else if (ok && strcmp(field, "super_pod_id") == 0) {
                c->spod_id = value;
            } else if (ok && strcmp(field, "server_index") == 0) {
                c->spod_server = value;
            } else {
                ok = 0;
            }
        } else if (strcmp(kind, "error") == 0) {
            int logic;
            unsigned int code;
            struct chip *c;
            ok = sscanf(line, "error %d %x", &logic, &code) == 2 && (c = by_logic(logic)) != NULL && c->ncodes < MAX_CODES;
            if (ok) {
                c->codes[c->ncodes++] = code;
            }
        } else if (strcmp(kind, "health") == 0) {
            int logic;
            unsigned int health;
            struct chip *c;
            ok = sscanf(line, "health %d %u", &logic, &health) == 2 && (c = by_logic(logic)) != NULL;
            if (ok) {
                c->health = health;
            }
        } else if (strcmp(kind, "ip") == 0) {
            int logic;
            char addr[64];
            struct chip *c;
            ok = sscanf(line, "ip %d %63s", &logic, addr) == 2 && (c = by_logic(logic)) != NULL &&
                 parse_ip(addr, c->ip, c->mask) == 0;
            if (ok) {
                c->has_ip = 1;
            }
        } else if (strcmp(kind, "topo") == 0) {
            int a, b;
            char code[16];
            ok = sscanf(line, "topo %d %d %15s", &a, &b, code) == 3 && a >= 0 && b >= 0 && a < MAX_CHIPS &&
                 b < MAX_CHIPS && topo_code(code) >= 0;
            if (ok) {
                topo[a][b] = topo[b][a] = topo_code(code);
            }
        } else if (strcmp(kind, "topo-default") == 0) {
            char code[16];
            ok = sscanf(line, "topo-default %15s", code) == 1 && topo_code(code) >= 0;
            if (ok) {
                topo_default = topo_code(code);
            }
        } else if (strcmp(kind, "vnpu-mode") == 0) {
            char mode[16];
            ok = sscanf(line, "vnpu-mode %15s", mode) == 1;
            docker_mode = ok && strcmp(mode, "docker") == 0;
        } else if (strcmp(kind, "driver-version") == 0) {
            ok = sscanf(line, "driver-version %63s", driver_version) == 1;
        } else if (strcmp(kind, "container-flag") == 0) {
            char flag[16];
            ok = sscanf(line, "container-flag %15s", flag) == 1 && (strcmp(flag, "plain") == 0 || strcmp(flag, "none") == 0);
            plain_container = ok && strcmp(flag, "plain") == 0;
        } else if (strcmp(kind, "vdev") == 0 && nvdevs < MAX_VDEVS) {
            struct vdev *v = &vdevs[nvdevs];
            ok = sscanf(line, "vdev %d %u %31s", &v->logic, &v->id, v->template_name) == 3;
            v->vfg = 0;
            if (ok) {
                nvdevs++;
            }
        } else if (strcmp(kind, "fail") == 0 && nfails < MAX_FAILS) {
            struct fail *x = &fails[nfails];
            x->kind = FAIL_RETURN;
            x->logic = -1;
            ok = sscanf(line, "fail %63s %d", x->fn, &x->code) == 2;
            if (ok) {
                nfails++;
            }
        } else if (strcmp(kind, "fail-chip") == 0 && nfails < MAX_FAILS) {
            struct fail *x = &fails[nfails];
            x->kind = FAIL_RETURN;
            ok = sscanf(line, "fail-chip %d %63s %d", &x->logic, x->fn, &x->code) == 3;
            if (ok) {
                nfails++;
            }
        } else if (strcmp(kind, "hang") == 0 && nfails < MAX_FAILS) {
            struct fail *x = &fails[nfails];
            x->kind = FAIL_HANG;
            ok = sscanf(line, "hang %63s %255s", x->fn, x->file) == 2;
            if (ok) {
                nfails++;
            }
        } else if (load_v2_line(kind, line) >= 0) {
            ok = load_v2_line(kind, line);
        } else if (strcmp(kind, "count") == 0 && nfails < MAX_FAILS) {
            struct fail *x = &fails[nfails];
            x->kind = FAIL_COUNT;
            ok = sscanf(line, "count %63s %d", x->fn, &x->code) == 2;
            if (ok) {
                nfails++;
            }
        }
        if (!ok) {
            fclose(f);
            return no;
        }
    }
    fclose(f);
    load_state();
    return 0;
}

/* ------------------------------------------------------------------------
 * Container detection, as dcmi_is_in_docker does it
 * (dcmi/dcmi_inner/src/dcmi_environment_judge.c:203-290), on the paths
 * under ACCEL_DRA_DCMI_ROOT (the caller's filesystem):
 *   1. /proc/self/cgroup has "docker-" or "docker/" (lower-cased);
 *   2. /.dockerenv exists;
 *   3. /usr/bin/systemd-detect-virt -c exits 0 (run without a shell);
 *   4. system("/bin/mount … | grep -Ei '\s+/\s+' | grep -E
 *      \"isulad|docker|containers|containerd\""), then the same with
 *      /usr/bin/mount: system() runs /bin/sh -c, so without a shell both
 *      fail. With one, the mount table is /proc/self/mountinfo: the line
 *      of the mount at / names its source and options.
 * ------------------------------------------------------------------------ */

static int cgroup_says_docker(void) {
    char path[512], line[1024];
    host_path(path, sizeof(path), "/proc/self/cgroup");
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    int found = 0;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        for (char *p = line; *p; p++) {
            *p = (char)tolower((unsigned char)*p);
        }
        found = strstr(line, "docker-") != NULL || strstr(line, "docker/") != NULL;
    }
    fclose(f);
    return found;
}

static int exists(const char *p) {
    char path[512];
    host_path(path, sizeof(path), p);
    return access(path, F_OK) == 0;
}

/* detect_virt runs systemd-detect-virt -c where the caller has it
 * (dcmi_safe_exec_syscmd_without_output: fork and exec, no shell). */
static int detect_virt(void) {
    char path[512];
    host_path(path, sizeof(path), "/usr/bin/systemd-detect-virt");
    if (access(path, X_OK) != 0) {
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        return 0;
    }
    if (pid == 0) {
        execl(path, path, "-c", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* mount_line copies into line the /proc/self/mountinfo line (under
 * ACCEL_DRA_DCMI_ROOT) of the mount at point, and says whether there is
 * one. Its fields: id parent major:minor root mount-point … */
static int mount_line(const char *point, char *line, int size) {
    char path[512];
    host_path(path, sizeof(path), "/proc/self/mountinfo");
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    int found = 0;
    while (!found && fgets(line, size, f) != NULL) {
        char p[512];
        found = sscanf(line, "%*s %*s %*s %*s %511s", p) == 1 && strcmp(p, point) == 0;
    }
    fclose(f);
    return found;
}

/* mount_says_container is the two system() pipelines: nothing without
 * /bin/sh; else whether the mount at / mentions a container runtime. */
static int mount_says_container(void) {
    if (!exists("/bin/sh") || !(exists("/bin/mount") || exists("/usr/bin/mount"))) {
        return 0;
    }
    char line[2048];
    if (!mount_line("/", line, sizeof(line))) {
        return 0;
    }
    return strstr(line, "isulad") || strstr(line, "docker") || strstr(line, "containers") ||
           strstr(line, "containerd");
}

static int phy_machine_root(void) { return !in_docker; }
static int privileged_docker_root(void) { return in_docker && !plain_container; }

static int in_container(void) {
    return cgroup_says_docker() || exists("/.dockerenv") || detect_virt() || mount_says_container();
}

/* is_mount_point says whether /proc/self/mountinfo lists p as a mount
 * point: rename(2) of one fails with EBUSY, as it does for the
 * single-file bind mount of /etc/vnpu.cfg a container gets. */
static int is_mount_point(const char *p) {
    char line[2048];
    return mount_line(p, line, sizeof(line));
}

int dcmi_init(void) {
    initialized = 0;
    if (load() != 0) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    /* dcmi_run_env_init (dcmi_init/src/dcmi_init_basic.c:32-38), once per
     * dcmi_init as in the library. */
    in_docker = in_container();
    int rc = failing(__func__);
    if (rc != 0) {
        return rc;
    }
    if (chip_type() == CHIP_950) {
        return DCMI_ERR_NOT_SUPPORT; /* a 950 is read through dcmiv2_init (dcmi_init_basic.c:1446-1452) */
    }
    initialized = 1;
    return DCMI_OK;
}

int dcmi_get_card_list(int *card_num, int *card_list, int list_len) {
    FAIL_IF_ASKED();
    int n = 0;
    for (int i = 0; i < nchips; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++) {
            seen |= card_list[j] == chips[i].card;
        }
        if (!seen) {
            if (n >= list_len) {
                return DCMI_ERR_INVALID_PARAMETER;
            }
            card_list[n++] = chips[i].card;
        }
    }
    counted(__func__, &n);
    *card_num = n;
    return DCMI_OK;
}

int dcmi_get_device_num_in_card(int card_id, int *device_num) {
    FAIL_IF_ASKED();
    int n = 0;
    for (int i = 0; i < nchips; i++) {
        n += chips[i].card == card_id;
    }
    if (n == 0) {
        return DCMI_ERR_INVALID_PARAMETER; /* an unknown card (dcmi/dcmi_interface/src/dcmi_basic_info_intf.c:209) */
    }
    counted(__func__, &n);
    *device_num = n;
    return DCMI_OK;
}

/* A card or device the board does not have is an invalid parameter:
 * dcmi_get_device_type, which every per-chip call asks first, answers
 * -8001 (dcmi/dcmi_interface/src/dcmi_basic_info_intf.c:162-209). */
#define CHIP_OR_FAIL(c, card, device)                        \
    struct chip *c = by_card(card, device);                  \
    if (c == NULL) {                                         \
        return DCMI_ERR_INVALID_PARAMETER;                   \
    }                                                        \
    do {                                                     \
        int chip_rc_ = failing_on(__func__, c->logic);       \
        if (chip_rc_ != 0) {                                 \
            return chip_rc_;                                 \
        }                                                    \
    } while (0)

int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    *device_logic_id = c->logic;
    return DCMI_OK;
}

int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid) {
    FAIL_IF_ASKED();
    struct chip *c = by_logic((int)logicid);
    if (c == NULL) {
        return DCMI_ERR_DEVICE_NOT_EXIST;
    }
    int rc = failing_on(__func__, c->logic);
    if (rc != 0) {
        return rc;
    }
    *phyid = c->phy;
    return DCMI_OK;
}

/* dcmi_get_device_chip_info_v2: the fixture's chip name is the driver's
 * own (dsmi_chip_info.chip_name). On 910_93 DCMI splits it at the "_":
 * chip_name "Ascend" and what precedes it, npu_name what follows ("910_9392"
 * is "Ascend910" and "9392"); elsewhere both are the name
 * (dcmi/dcmi_inner/src/dcmi_inner_info_get.c:1257-1322, 1405-1415). */
int dcmi_get_device_chip_info_v2(int card_id, int device_id, struct dcmi_chip_info_v2 *chip_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    memset(chip_info, 0, sizeof(*chip_info));
    snprintf((char *)chip_info->chip_type, MAX_CHIP_NAME_LEN, "Ascend");
    snprintf((char *)chip_info->chip_name, MAX_CHIP_NAME_LEN, "%s", c->name);
    snprintf((char *)chip_info->npu_name, MAX_CHIP_NAME_LEN, "%s", c->name);
    const char *delim = strchr(c->name, '_');
    if ((chip_type() == CHIP_910_93 || chip_type() == CHIP_950) && delim != NULL) {
        snprintf((char *)chip_info->chip_name, MAX_CHIP_NAME_LEN, "Ascend%.*s", (int)(delim - c->name), c->name);
        snprintf((char *)chip_info->npu_name, MAX_CHIP_NAME_LEN, "%s", delim + 1);
    }
    snprintf((char *)chip_info->chip_ver, MAX_CHIP_NAME_LEN, "V1");
    chip_info->aicore_cnt = c->aicore;
    return DCMI_OK;
}

/* dcmi_get_device_chip_info is the v2 struct cut short
 * (dcmi/dcmi_interface/src/dcmi_basic_info_intf.c:1901-1931). */
int dcmi_get_device_chip_info(int card_id, int device_id, struct dcmi_chip_info *chip_info) {
    FAIL_IF_ASKED();
    struct dcmi_chip_info_v2 v2;
    int rc = dcmi_get_device_chip_info_v2(card_id, device_id, &v2);
    if (rc != DCMI_OK) {
        return rc;
    }
    memcpy(chip_info, &v2, sizeof(*chip_info));
    return DCMI_OK;
}

int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *hbm_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    if (c->hbm_mb == 0) {
        return DCMI_ERR_NOT_SUPPORT; /* 310P: DDR, no HBM */
    }
    memset(hbm_info, 0, sizeof(*hbm_info));
    hbm_info->memory_size = c->hbm_mb;
    hbm_info->freq = 1600;
    hbm_info->memory_usage = c->hbm_mb / 20;
    hbm_info->temp = 40;
    return DCMI_OK;
}

int dcmi_get_device_memory_info_v3(int card_id, int device_id, struct dcmi_get_memory_info_stru *memory_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    /* 910B and 910_93 have no such memory: dcmi/dcmi_inner/src/dcmi_inner_info_get.c:2250-2254. */
    if (chip_type() == CHIP_910B || chip_type() == CHIP_910_93) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    memset(memory_info, 0, sizeof(*memory_info));
    memory_info->memory_size = c->ddr_mb;
    memory_info->memory_available = c->ddr_mb;
    memory_info->hugepagesize = 2048;
    return DCMI_OK;
}

int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    memset(pcie_info, 0, sizeof(*pcie_info));
    pcie_info->venderid = 0x19e5;
    pcie_info->subvenderid = 0x0200;
    pcie_info->deviceid = c->pci_device_id;
    pcie_info->domain = c->domain;
    pcie_info->bdf_busid = c->bus;
    pcie_info->bdf_deviceid = c->dev;
    pcie_info->bdf_funcid = c->fn;
    return DCMI_OK;
}

int dcmi_get_device_health(int card_id, int device_id, unsigned int *health) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    *health = c->health;
    return DCMI_OK;
}

int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count, unsigned int *error_code_list,
                                 unsigned int list_len) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    int n = 0;
    for (int i = 0; i < c->ncodes && (unsigned int)i < list_len; i++) {
        error_code_list[n++] = c->codes[i];
    }
    *error_count = n;
    return DCMI_OK;
}

int dcmi_get_topo_info_by_device_id(int card_id1, int device_id1, int card_id2, int device_id2, int *topo_type) {
    FAIL_IF_ASKED();
    /* Only 910B and 910_93 answer: dcmi/dcmi_interface/src/dcmi_npu_link_intf.c:582-586. */
    if (chip_type() != CHIP_910B && chip_type() != CHIP_910_93) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    CHIP_OR_FAIL(a, card_id1, device_id1);
    CHIP_OR_FAIL(b, card_id2, device_id2);
    if (a == b) {
        *topo_type = DCMI_TOPO_TYPE_SELF;
    } else if (topo[a->logic][b->logic] >= 0) {
        *topo_type = topo[a->logic][b->logic];
    } else {
        *topo_type = topo_default;
    }
    return DCMI_OK;
}

int dcmi_get_device_ip(int card_id, int device_id, enum dcmi_port_type input_type, int port_id,
                       struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    if (input_type != DCMI_ROCE_PORT || port_id != 0) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    if (!c->has_ip) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    memset(ip, 0, sizeof(*ip));
    memset(mask, 0, sizeof(*mask));
    memcpy(ip->u_addr.ip4, c->ip, 4);
    memcpy(mask->u_addr.ip4, c->mask, 4);
    ip->ip_type = mask->ip_type = DCMI_IPADDR_TYPE_V4;
    return DCMI_OK;
}

/* vdev_cores is the AI core count a template names ("vir04_3c": 4). */
static unsigned int vdev_cores(const struct vdev *v) {
    unsigned int n = 0;
    sscanf(v->template_name, "vir%u", &n);
    return n;
}

/* vdev_resource answers GET_VDEV_RESOURCE as the HAL does
 * (drvGetSingleVdevInfo, src/ascend_hal/dms/drv_devmng/ascend910/
 * devdrv_vdev.c:478-480 and get_info_by_vdev_id, 282-316): the whole
 * query_info set to 0xFF, then the name, the AI cores and the flags; the
 * activity fields (vdev_aicore_utilization, vdev_memory_total and _free)
 * stay 0xFF. */
static int vdev_resource(const struct vdev *v, struct dcmi_vdev_query_stru *q) {
    memset(&q->query_info, 0xff, sizeof(q->query_info));
    snprintf(q->query_info.name, DCMI_VDEV_RES_NAME_LEN, "%s", v->template_name);
    q->query_info.is_container_used = 0;
    q->query_info.vfid = 0;
    q->query_info.container_id = 0;
    q->query_info.computing.aic = (float)vdev_cores(v);
    return DCMI_OK;
}

static int read_vnpu_telemetry(unsigned int id, unsigned int *util, unsigned long long *used_mb);

/* vdev_activity answers GET_VDEV_ACTIVITY as the library does. The HAL
 * sets query_info to 0xFF and fills the AI core utilization only
 * (drvGetVdevActivityInfo, devdrv_vdev.c:443-446); DCMI then reads the
 * vNPU's memory, which it can only on a 310P that is no SoC, and fails
 * the whole query otherwise (dcmi_get_npu_device_info and
 * dcmi_get_vnpu_memory, dcmi/dcmi_inner/src/dcmi_inner_info_get_ext.c:
 * 977-984, 845-870; in a container only a privileged one may ask). The
 * memory is the vNPU's DDR from dsmi_get_resource_info, in KB (npu-exporter
 * labels vnpu_pod_total_memory "KB"): here the template's share of the
 * chip's DDR, and the used figure from the telemetry fixture's vload line. */
static int vdev_activity(const struct chip *c, const struct vdev *v, struct dcmi_vdev_query_stru *q) {
    unsigned int util = 0;
    unsigned long long used_mb = 0;
    int rc = read_vnpu_telemetry(v->id, &util, &used_mb);
    if (rc != 0) {
        return rc;
    }
    memset(&q->query_info, 0xff, sizeof(q->query_info));
    q->query_info.computing.vdev_aicore_utilization = util;
    if (in_docker && !privileged_docker_root()) {
        return DCMI_ERR_OPER_NOT_PERMITTED;
    }
    if (chip_type() != CHIP_310P) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    unsigned long long total_mb = c->aicore ? c->ddr_mb * vdev_cores(v) / c->aicore : 0;
    if (used_mb > total_mb) {
        used_mb = total_mb;
    }
    q->query_info.computing.vdev_memory_total = total_mb * 1024;
    q->query_info.computing.vdev_memory_free = (total_mb - used_mb) * 1024;
    return DCMI_OK;
}

/* spod_info answers SPOD_INFO as the driver does: only where the HAL has
 * it, on 910_93 (and 950) boards (src/ascend_hal/dms/chip/soc/CMakeLists.txt:13-16
 * build spod_info.c for those products only; devdrv_manager_dev_info_api.c:301),
 * "not supported" elsewhere and on a 910_93 board outside a super pod (no
 * spod line). Each chip's SDID is laid out as the 910_93 DCMI reference
 * documents it (dcmi_get_device_info, DCMI_MAIN_CMD_CHIP_INF): server
 * index in bits 22-31, chip id (the card) in 18-21, die id (the device) in
 * 16-17, device id chip * 2 + die in 0-15. */
static int spod_info(const struct chip *c, void *buf, unsigned int *size) {
    if (*size < sizeof(struct dcmi_spod_info)) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    if ((chip_type() != CHIP_910_93 && chip_type() != CHIP_950) || !spod.set) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    struct dcmi_spod_info *i = buf;
    memset(i, 0, sizeof(*i));
    i->sdid = (spod.server << 22) | ((unsigned int)c->card << 18) | ((unsigned int)c->device << 16) |
              (unsigned int)(c->card * 2 + c->device);
    i->super_pod_size = spod.size;
    i->super_pod_id = spod.id;
    i->server_index = spod.server;
    i->chassis_id = spod.chassis;
    i->super_pod_type = spod.type;
    if (c->spod_sdid >= 0) {
        i->sdid = (unsigned int)c->spod_sdid;
    }
    if (c->spod_id >= 0) {
        i->super_pod_id = (unsigned int)c->spod_id;
    }
    if (c->spod_server >= 0) {
        i->server_index = (unsigned int)c->spod_server;
    }
    *size = sizeof(*i);
    return DCMI_OK;
}

/* spod_node_status answers SPOD_NODE_STATUS as dcmi_get_spod_node_status
 * asks it (the driver source's dcmi_get_spod_node_status: a union of the
 * target's SDID in and its status out, 4 bytes, through
 * dcmi_get_device_info(CHIP_INF, SPOD_NODE_STATUS)): where SPOD_INFO
 * answers, the fabric's record of that SDID, 0 (normal) by default
 * (docs/zh/Ascend_910_93_DCMI_API/.../dcmi_get_spod_node_status.md). */
static int spod_node_status(void *buf, unsigned int *size) {
    if (*size < sizeof(unsigned int)) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    if (chip_type() != CHIP_910_93 || !spod.set) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    unsigned int *para = buf, sdid = *para;
    reload_spod_node_status();
    *para = 0;
    for (int i = 0; i < nspod_node_status; i++) {
        if (spod_node_status_of[i].sdid == sdid) {
            *para = spod_node_status_of[i].status;
        }
    }
    *size = sizeof(unsigned int);
    return DCMI_OK;
}

int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                         unsigned int *size) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    if (main_cmd == DCMI_MAIN_CMD_CHIP_INF && sub_cmd == DCMI_CHIP_INF_SUB_CMD_SPOD_INFO) {
        return spod_info(c, buf, size);
    }
    if (main_cmd == DCMI_MAIN_CMD_CHIP_INF && sub_cmd == DCMI_CHIP_INF_SUB_CMD_SPOD_NODE_STATUS) {
        return spod_node_status(buf, size);
    }
    if (main_cmd != DCMI_MAIN_CMD_VDEV_MNG) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    /* The driver keeps the vNPUs: those another process made (npu-smi,
     * an agent before a restart) show here too. */
    load_state();
    if (sub_cmd == VMNG_SUB_CMD_GET_TOTAL_RESOURCE) {
        if (*size < sizeof(struct dcmi_soc_total_resource)) {
            return DCMI_ERR_INVALID_PARAMETER;
        }
        struct dcmi_soc_total_resource *r = buf;
        memset(r, 0, sizeof(*r));
        for (int i = 0; i < nvdevs && r->vdev_num < DCMI_SOC_SPLIT_MAX; i++) {
            if (vdevs[i].logic == c->logic) {
                r->vdev_id[r->vdev_num++] = vdevs[i].id;
            }
        }
        r->computing.aic = (float)c->aicore;
        r->computing.memory_size = c->hbm_mb ? c->hbm_mb : c->ddr_mb;
        *size = sizeof(*r);
        return DCMI_OK;
    }
    if (sub_cmd == VMNG_SUB_CMD_GET_VDEV_RESOURCE || sub_cmd == VMNG_SUB_CMD_GET_VDEV_ACTIVITY) {
        if (*size < sizeof(struct dcmi_vdev_query_stru)) {
            return DCMI_ERR_INVALID_PARAMETER;
        }
        struct dcmi_vdev_query_stru *q = buf;
        for (int i = 0; i < nvdevs; i++) {
            if (vdevs[i].logic == c->logic && vdevs[i].id == q->vdev_id) {
                *size = sizeof(*q);
                return sub_cmd == VMNG_SUB_CMD_GET_VDEV_RESOURCE ? vdev_resource(&vdevs[i], q)
                                                                 : vdev_activity(c, &vdevs[i], q);
            }
        }
        return DCMI_ERR_DEVICE_NOT_EXIST;
    }
    return DCMI_ERR_NOT_SUPPORT;
}

/* vnpu_permitted is dcmi_check_set_vnpu_permission
 * (dcmi/dcmi_interface/src/dcmi_virtual_intf.c:257-297) for a root caller:
 * 910B and 910_93 only on the host or in a privileged container. */
static int vnpu_permitted(void) {
    enum chip_type t = chip_type();
    if ((t == CHIP_910B || t == CHIP_910_93) && !(phy_machine_root() || privileged_docker_root())) {
        return DCMI_ERR_OPER_NOT_PERMITTED;
    }
    return DCMI_OK;
}

/* persists tells whether a create or destroy is written to /etc/vnpu.cfg
 * here (dcmi_save_create_vnpu_cfg, dcmi_virtual_intf.c:492-495). */
static int persists(void) {
    enum chip_type t = chip_type();
    return !in_docker || (t == CHIP_910 && in_docker) || t == CHIP_310P || (t == CHIP_910B && privileged_docker_root());
}

/* cfg_lock takes the vNPU config lock as dcmi_cfg_set_lock does
 * (dcmi/dcmi_inner/src/dcmi_inner_cfg_persist.c:84-110): open (O_CREAT) of
 * /run/vnpu_cfg_lock/vnpu_cfg_lock_flag, which fails where that directory
 * is missing; its callers then return -8020 (cfg_persist.c:879-881,
 * 1279-1282). It returns the open fd or -1. */
static int cfg_lock(void) {
    char path[512];
    host_path(path, sizeof(path), "/run/vnpu_cfg_lock/vnpu_cfg_lock_flag");
    return open(path, O_RDWR | O_CREAT, 0600);
}

#define CFG_MAX (64 * 1024)

/* read_cfg reads /etc/vnpu.cfg into buf (dcmi_cfg_open_file, "r";
 * cfg_persist.c:229-260): a missing file is first written with the
 * library's default content (DCMI_VNPU_CONF_DEFAULT_COMMENT,
 * dcmi_inner_cfg_persist.h:31). */
static int read_cfg(char *buf, size_t n) {
    char path[512];
    host_path(path, sizeof(path), "/etc/vnpu.cfg");
    FILE *f = fopen(path, "r");
    if (f == NULL && errno == ENOENT) {
        FILE *w = fopen(path, "w");
        if (w != NULL) {
            fputs("vnpu_config_recover:enable\n[vnpu-config start]\n[vnpu-config end]\n", w);
            fclose(w);
        }
        f = fopen(path, "r");
    }
    if (f == NULL) {
        return DCMI_ERR_FILE_OPERATE_FAIL; /* cfg_persist.c:884-888 */
    }
    size_t len = fread(buf, 1, n - 1, f);
    buf[len] = '\0';
    fclose(f);
    return DCMI_OK;
}

/* write_cfg is dcmi_cfg_write_to_file (cfg_persist.c:544-590) with
 * dcmi_cfg_check_cfg_path (524-542): where DCMI does not think it runs in
 * a container it first renames /etc/vnpu.cfg to /etc/vnpu.cfg.bak, and a
 * failed rename fails the write (-8001, lines 559-562). rename(2) of a
 * mount point fails with EBUSY: the single-file bind mount a container
 * gets of the host's /etc/vnpu.cfg cannot be renamed. */
static int write_cfg(const char *content) {
    char path[512], bak[512];
    host_path(path, sizeof(path), "/etc/vnpu.cfg");
    host_path(bak, sizeof(bak), "/etc/vnpu.cfg.bak");
    if (!in_docker) {
        if (is_mount_point("/etc/vnpu.cfg")) {
            errno = EBUSY;
            return DCMI_ERR_INVALID_PARAMETER;
        }
        if (rename(path, bak) != 0) {
            return DCMI_ERR_INVALID_PARAMETER;
        }
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        (void)rename(bak, path);
        return DCMI_ERR_FILE_OPERATE_FAIL;
    }
    size_t len = strlen(content);
    int ok = fwrite(content, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        (void)rename(bak, path);
        return DCMI_ERR_FILE_OPERATE_FAIL;
    }
    (void)unlink(bak);
    return DCMI_OK;
}

/* save_create records the create-vnpu line the library records in
 * /etc/vnpu.cfg (dcmi_cfg_insert_creat_vnpu_cmdline, cfg_persist.c:855-908;
 * the vGroup only on 310P), under the lock: the file read, the line added,
 * the file written again. */
static int save_create(const struct chip *c, const struct vdev *v) {
    int fd = cfg_lock();
    if (fd < 0) {
        return DCMI_ERR_RESOURCE_OCCUPIED;
    }
    static char buf[CFG_MAX];
    int rc = read_cfg(buf, sizeof(buf) - 256);
    if (rc == DCMI_OK) {
        size_t len = strlen(buf);
        if (chip_type() == CHIP_310P) {
            snprintf(buf + len, sizeof(buf) - len, "%d:%u:npu-smi set -t create-vnpu -i %d -c %d -f %s -v %u -g %u\n",
                     c->phy, v->id, c->card, c->device, v->template_name, v->id, v->vfg);
        } else {
            snprintf(buf + len, sizeof(buf) - len, "%d:%u:npu-smi set -t create-vnpu -i %d -c %d -f %s -v %u\n", c->phy,
                     v->id, c->card, c->device, v->template_name, v->id);
        }
        rc = write_cfg(buf);
    }
    close(fd);
    return rc;
}

/* save_destroy drops the vNPU's line from /etc/vnpu.cfg the same way
 * (dcmi_save_destroy_vnpu_cfg, dcmi_virtual_intf.c:520-560). */
static int save_destroy(const struct chip *c, unsigned int id) {
    int fd = cfg_lock();
    if (fd < 0) {
        return DCMI_ERR_RESOURCE_OCCUPIED;
    }
    static char buf[CFG_MAX], out[CFG_MAX];
    int rc = read_cfg(buf, sizeof(buf));
    if (rc == DCMI_OK) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "%d:%u:", c->phy, id);
        out[0] = '\0';
        size_t olen = 0;
        for (char *line = buf; *line;) {
            char *next = strchr(line, '\n');
            size_t n = next ? (size_t)(next - line + 1) : strlen(line);
            if (strncmp(line, prefix, strlen(prefix)) != 0 && olen + n < sizeof(out)) {
                memcpy(out + olen, line, n);
                olen += n;
            }
            line += n;
        }
        out[olen] = '\0';
        rc = write_cfg(out);
    }
    close(fd);
    return rc;
}

/* The template tables of dcmi_get_vdev_conf (dcmi_virtual_intf.c:26-49,
 * 51-126, 160-201, 240-250): 310P and 910 have one; 910B has one per board
 * bin, chosen by the board id (the mock has none: it tells the bins by the
 * chip's AI cores and HBM, 24 cores bin0, 20 cores and 32 GB bin2, 20 cores
 * and 64 GB bin1 or bin2_1, whose lists are the same). An unknown name
 * answers -8001, a board with no bin -8005 (DCMI_ERR_CODE_INNER_ERR). The
 * 910_93 has no table there. */
static const char *const templates_310p[] = {"vir01", "vir02", "vir02_1c", "vir04", "vir04_3c", "vir04_3c_ndvpp",
                                             "vir04_4c_dvpp", NULL};
static const char *const templates_910[] = {"vir02", "vir04", "vir08", "vir16", NULL};
static const char *const templates_910b_bin0[] = {"vir12_3c_32g", "vir06_1c_16g", NULL};
static const char *const templates_910b_bin1[] = {"vir10_3c_32g", "vir05_1c_16g", NULL};
static const char *const templates_910b_bin2[] = {"vir10_3c_16g", "vir10_4c_16g_m", "vir10_3c_16g_nm", "vir05_1c_8g", NULL};

static int template_known(const struct chip *c, const char *name) {
    const char *const *table = NULL;
    switch (chip_type()) {
    case CHIP_310P:
        table = templates_310p;
        break;
    case CHIP_910:
        table = templates_910;
        break;
    case CHIP_910B:
        if (c->aicore == 24) {
            table = templates_910b_bin0;
        } else if (c->aicore == 20 && c->hbm_mb <= 32768) {
            table = templates_910b_bin2;
        } else if (c->aicore == 20) {
            table = templates_910b_bin1;
        } else {
            return DCMI_ERR_INNER;
        }
        break;
    default:
        return DCMI_OK;
    }
    for (; *table != NULL; table++) {
        if (strcmp(*table, name) == 0) {
            return DCMI_OK;
        }
    }
    return DCMI_ERR_INVALID_PARAMETER;
}

/* hold_after_create is a test's hook, no DCMI behaviour: with
 * ACCEL_DRA_DCMI_HOLD_CREATE naming a file, a create that is made and
 * recorded writes the vNPU id there and never returns, so an e2e test can
 * kill -9 the caller between the library's create and its own checkpoint. */
static void hold_after_create(unsigned int id) {
    const char *path = getenv("ACCEL_DRA_DCMI_HOLD_CREATE");
    if (path == NULL || *path == '\0') {
        return;
    }
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%u\n", id);
        fclose(f);
    }
    for (;;) {
        pause();
    }
}

/* dcmi_create_vdevice does not look at the vNPU mode (npu-smi does, before
 * calling it: npucli/src/npu_chip_set.c:1474-1478): dcmi_virtual_intf.c:964-1010. */
int dcmi_create_vdevice(int card_id, int device_id, struct dcmi_create_vdev_res_stru *vdev,
                        struct dcmi_create_vdev_out *out) {
    FAIL_IF_ASKED();
    int rc = vnpu_permitted();
    if (rc != DCMI_OK) {
        return rc;
    }
    CHIP_OR_FAIL(c, card_id, device_id);
    /* A driver that refuses vNPUs on one chip (a fail-chip line). */
    rc = failing_on(__func__, c->logic);
    if (rc != DCMI_OK) {
        return rc;
    }
    load_state();
    /* vNPU ids of a chip: [phy*16+100, phy*16+115] (npu-smi create-vnpu -v) */
    rc = template_known(c, vdev->template_name);
    if (rc != DCMI_OK) {
        return rc;
    }
    unsigned int first = c->phy * 16 + 100;
    if (vdev->vdev_id < first || vdev->vdev_id >= first + 16 || vdev->template_name[0] == '\0' ||
        nvdevs >= MAX_VDEVS) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    for (int i = 0; i < nvdevs; i++) {
        if (vdevs[i].id == vdev->vdev_id) {
            return DCMI_ERR_RESOURCE_OCCUPIED;
        }
    }
    struct vdev *v = &vdevs[nvdevs];
    v->logic = c->logic;
    v->id = vdev->vdev_id;
    /* An unspecified vGroup is one the library picks, here the count of the
     * chip's vNPUs; any other value pins the vNPU to that group. */
    v->vfg = vdev->vfg_id;
    if (v->vfg == VFG_ID_ANY) {
        v->vfg = 0;
        for (int i = 0; i < nvdevs; i++) {
            v->vfg += vdevs[i].logic == c->logic;
        }
    }
    snprintf(v->template_name, TEMPLATE_NAME_LEN, "%s", vdev->template_name);
    if (persists()) {
        /* A create that cannot be recorded is undone: dcmi_virtual_intf.c:648-653. */
        rc = save_create(c, v);
        if (rc != DCMI_OK) {
            return rc;
        }
    }
    nvdevs++;
    memset(out, 0, sizeof(*out));
    out->vdev_id = v->id;
    out->pcie_bus = c->bus;
    out->vfg_id = v->vfg;
    save_state();
    hold_after_create(v->id);
    return DCMI_OK;
}

int dcmi_set_destroy_vdevice(int card_id, int device_id, unsigned int vdevid) {
    FAIL_IF_ASKED();
    int rc = vnpu_permitted();
    if (rc != DCMI_OK) {
        return rc;
    }
    CHIP_OR_FAIL(c, card_id, device_id);
    load_state();
    for (int i = 0; i < nvdevs; i++) {
        if (vdevs[i].logic == c->logic && vdevs[i].id == vdevid) {
            if (persists()) {
                /* The destroy is recorded under the same lock. */
                rc = save_destroy(c, vdevid);
                if (rc != DCMI_OK) {
                    return rc;
                }
            }
            vdevs[i] = vdevs[--nvdevs];
            save_state();
            return DCMI_OK;
        }
    }
    return DCMI_ERR_DEVICE_NOT_EXIST;
}

int dcmi_get_driver_version(char *driver_ver, unsigned int len) {
    FAIL_IF_ASKED();
    if (driver_ver == NULL || len == 0) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    snprintf(driver_ver, len, "%s", driver_version);
    return DCMI_OK;
}

/* dcmi_get_vdevice_mode (dcmi_virtual_intf.c:1055-1085): 0 docker, 1 VM;
 * refused (-8002) except on the host, or for 910B in a privileged
 * container (310P: on the host, or as root in a VM). */
int dcmi_get_vdevice_mode(int *mode) {
    FAIL_IF_ASKED();
    int allowed = phy_machine_root() || (chip_type() == CHIP_910B && privileged_docker_root());
    if (chip_type() == CHIP_310P) {
        allowed = phy_machine_root();
    }
    if (!allowed) {
        return DCMI_ERR_OPER_NOT_PERMITTED;
    }
    if (mode == NULL) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    *mode = docker_mode ? 0 : 1;
    return DCMI_OK;
}

/* dcmi_set_vdevice_mode (dcmi_virtual_intf.c:1154-1175), without the
 * checks of a mode change with vNPUs in place. */
int dcmi_set_vdevice_mode(int mode) {
    FAIL_IF_ASKED();
    if (!(phy_machine_root() || (chip_type() == CHIP_910B && privileged_docker_root()))) {
        return DCMI_ERR_OPER_NOT_PERMITTED;
    }
    if (mode != 0 && mode != 1) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    docker_mode = mode == 0;
    return DCMI_OK;
}

/* ------------------------------------------------------------------------
 * Telemetry: utilization, temperature and power, read by the node agent's
 * chip metrics (pkg/vendors/ascend/telemetry.go). Their values come from a
 * second fixture, the file named in ACCEL_DRA_DCMI_TELEMETRY (format in
 * README.md), re-read at every call so a test can change a chip's load
 * between two reads. A chip it does not list is idle: 0% AI core, 40 °C,
 * 70 W. Memory in use is dcmi_get_device_hbm_info's above.
 * ------------------------------------------------------------------------ */

struct telemetry {
    unsigned int util;  /* AI core %, 0..100 */
    int temp;           /* °C */
    int power;          /* 0.1 W, as dcmi_get_device_power_info reports */
    char fail_fn[64];   /* a call that fails on this chip only */
    int fail_code;
};

/* open_telemetry opens the telemetry fixture named by
 * ACCEL_DRA_DCMI_TELEMETRY, or returns NULL when there is none (every
 * figure then keeps its idle default). */
static FILE *open_telemetry(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_TELEMETRY");
    if (path == NULL || *path == '\0') {
        return NULL;
    }
    return fopen(path, "r");
}

/* read_telemetry fills t for chip c from the telemetry fixture; it returns
 * non-zero when a line cannot be read, so a broken fixture shows. */
static int read_telemetry(const struct chip *c, struct telemetry *t) {
    memset(t, 0, sizeof(*t));
    t->temp = 40;
    t->power = 700;
    FILE *f = open_telemetry();
    if (f == NULL) {
        return 0;
    }
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        char *hash = strchr(line, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char kind[16] = "";
        if (sscanf(line, "%15s", kind) != 1) {
            continue;
        }
        int logic, code;
        unsigned int util;
        int temp, power;
        char fn[64];
        if (strcmp(kind, "load") == 0 && sscanf(line, "load %d %u %d %d", &logic, &util, &temp, &power) == 4) {
            if (logic == c->logic) {
                t->util = util, t->temp = temp, t->power = power;
            }
        } else if (strcmp(kind, "vload") == 0 || strcmp(kind, "mcu") == 0) {
            /* a vNPU's line (read_vnpu_telemetry) or a card's (read_mcu_power) */
        } else if (strcmp(kind, "fail") == 0 && sscanf(line, "fail %d %63s %d", &logic, fn, &code) == 3) {
            if (logic == c->logic) {
                snprintf(t->fail_fn, sizeof(t->fail_fn), "%s", fn);
                t->fail_code = code;
            }
        } else {
            rc = DCMI_ERR_INVALID_PARAMETER;
        }
    }
    fclose(f);
    return rc;
}

#define TELEMETRY_OR_FAIL(t, c)                                       \
    struct telemetry t;                                               \
    do {                                                              \
        int rc_ = read_telemetry(c, &t);                              \
        if (rc_ != 0) {                                               \
            return rc_;                                               \
        }                                                             \
        if (t.fail_code != 0 && strcmp(t.fail_fn, __func__) == 0) {   \
            return t.fail_code;                                       \
        }                                                             \
    } while (0)

int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type, unsigned int *utilization_rate) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    TELEMETRY_OR_FAIL(t, c);
    if (input_type != DCMI_UTILIZATION_AICORE) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    *utilization_rate = t.util;
    return DCMI_OK;
}

int dcmi_get_device_temperature(int card_id, int device_id, int *temperature) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    TELEMETRY_OR_FAIL(t, c);
    *temperature = t.temp;
    return DCMI_OK;
}

/* A 310P chip has no power figure of its own: dsmi_get_device_power_info
 * answers "not supported", which dcmi_get_npu_device_power_info returns
 * (dcmi/dcmi_inner/src/dcmi_inner_info_get.c:1662-1689); npu-smi prints NA
 * for it (npucli/src/npu_info_print.c:245-251). The card's power is the
 * MCU's (dcmi_mcu_get_power_info, below). */
int dcmi_get_device_power_info(int card_id, int device_id, int *power) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    TELEMETRY_OR_FAIL(t, c);
    if (chip_type() == CHIP_310P) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    *power = t.power;
    return DCMI_OK;
}

/* read_mcu_power reads the card's "mcu <card> <power in 0.1 W>" line from
 * the telemetry fixture; a card it does not list draws 72 W (an Atlas 300I
 * Duo idles about there). It returns non-zero on a line it cannot read. */
static int read_mcu_power(int card, int *power) {
    *power = 720;
    FILE *f = open_telemetry();
    if (f == NULL) {
        return 0;
    }
    char line[256];
    int rc = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        int c, p;
        if (strncmp(line, "mcu", 3) != 0) {
            continue;
        }
        if (sscanf(line, "mcu %d %d", &c, &p) != 2) {
            rc = DCMI_ERR_INVALID_PARAMETER;
        } else if (c == card) {
            *power = p;
        }
    }
    fclose(f);
    return rc;
}

/* dcmi_mcu_get_power_info (dcmi/dcmi_interface/src/dcmi_mcu_intf.c:1946-1972):
 * an unknown card is an invalid parameter; a board without an MCU, and
 * 910B, 910_93 and 950 boards, answer "not supported". The MCU is there on
 * the PCIe cards (dcmi/dcmi_init/src/dcmi_init_for_card.c:886-888: every
 * card but the 310P 200I Pro, the 950 and the 310 in a VM), and on servers
 * only for 910B and 910_93 (dcmi_init_for_server.c:327-328), which the call
 * refuses anyway. The mock's 310P nodes are cards (Atlas 300I Duo), its
 * 910A node a server (Atlas 800): only 310P answers. */
int dcmi_mcu_get_power_info(int card_id, int *power) {
    FAIL_IF_ASKED();
    if (power == NULL) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    int known = 0;
    for (int i = 0; i < nchips; i++) {
        known |= chips[i].card == card_id;
    }
    if (!known) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    if (chip_type() != CHIP_310P) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    return read_mcu_power(card_id, power);
}

/* read_vnpu_telemetry reads a vNPU's "vload <vNPU id> <AI core %> <MB in
 * use>" line from the telemetry fixture; an unlisted vNPU is idle. */
static int read_vnpu_telemetry(unsigned int id, unsigned int *util, unsigned long long *used_mb) {
    *util = 0, *used_mb = 0;
    FILE *f = open_telemetry();
    if (f == NULL) {
        return 0;
    }
    char line[256];
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned int vid, u;
        unsigned long long mb;
        if (sscanf(line, "vload %u %u %llu", &vid, &u, &mb) == 3 && vid == id) {
            *util = u, *used_mb = mb;
        }
    }
    fclose(f);
    return 0;
}

/* DCMI v2, the Ascend 950's calls. */
#include "mock_dcmiv2.c"
