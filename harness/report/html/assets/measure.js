(function () {
  function measure() {
    var ids = JSON.parse(document.getElementById('report-figures').textContent);
    var out = {};
    ids.forEach(function (id) {
      var el = document.getElementById(id);
      if (!el) { out[id] = null; return; }
      var svg = el.querySelector('svg');
      var r = (svg || el).getBoundingClientRect();
      var marks = svg ? svg.querySelectorAll('path, use, rect, line, polyline, polygon').length : 0;
      var box = null;
      try { if (svg) { var b = svg.getBBox(); box = [b.width, b.height]; } } catch (e) { box = null; }
      out[id] = {width: r.width, height: r.height, marks: marks, bbox: box};
    });
    document.getElementById('figure-layout').textContent = JSON.stringify(out);
  }
  measure();
  window.addEventListener('load', measure);
})();
